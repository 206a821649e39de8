"""Runs a claimed task: its nodes in a bounded pool, each node's steps in order, skipping the
steps a previous (dead) worker completed, stopping before the next step on terminate."""

from __future__ import annotations

import heapq
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import Any

from common.audit import current_actor, worker_actor
from common.context import RequestContext, current_marker
from common.documents import Document
from common.engine import STUCK, Attempts, stuck
from common.errors import BerthError, Conflict
from common.runner import Hold
from common.status import simple_message
from common.workflow import Done, Failed, Retry, StepPolicy
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import ProgressStore, TeardownUpdate
from drydock_api.db.states import TaskResult, TaskStatus, summarize
from drydock_api.db.store import TaskStore
from drydock_api.nodes.design import Design, NodeDef, provisioner_of
from drydock_api.tasks import teardown as td
from drydock_api.tasks.actions import ActionDef
from drydock_api.tasks.budget import STEP as BUDGET_STEP
from drydock_api.tasks.context import (
    NodeContext,
    NodeStep,
    Ports,
    SiteContext,
    StepSettings,
)
from drydock_api.tasks.engine import StepEngine, TaskDrives

LOG = logging.getLogger(__name__)
S, R = TaskStatus, TaskResult  # compare stored statuses with the enums, never strings
MESSAGE_FIELDS = ("power",)  # a step's details its message carries (what power-off it got)
SAVE_EVERY = 5.0  # a waiting step's unchanged retry is saved at least this often (s)


@dataclass
class _NodeRun:
    """One node of a running task: the steps still to run, the current step (its row, its
    context, whose `state` survives its attempts) and where its attempts stand."""

    node: NodeDef
    sub: TaskRow
    options: dict[str, Any]
    pending: list[NodeStep]
    previous: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, TaskRow] | None = None
    teardown: bool = False  # a teardown action: the node's teardown record follows it
    design_grace: float | None = None  # the design's power.grace_period (nodes.power)
    earlier: dict[str, dict[str, Any]] = field(default_factory=dict)
    step: NodeStep | None = None
    row: TaskRow | None = None
    ctx: NodeContext | None = None
    seen: Attempts = field(default_factory=lambda: Attempts(started=0.0))
    retake: bool = False  # resumed after take_budget_slot: hold the slots again first
    blocked: list[str] = field(default_factory=list)  # what the retake last waited for
    waiting_since: float | None = None  # when the retake first found a domain full
    ports: Ports | None = None  # the ports of the task design's provisioner
    found: dict[str, Any] | None = None  # the node's teardown record as this task began it
    saved: str | None = None  # what the running step's last save held (see _save)
    saved_at: float = 0.0
    attempt_at: float | None = None  # when the attempt running now began
    stuck: bool = False  # an attempt ran past its attempt timeout: the node failed, StepStuck
    guard: threading.Lock = field(default_factory=threading.Lock)


class DesignSource:
    """What the orchestrator needs from the design loader (documents and parsed design)."""

    def __init__(self, documents: Callable[[Any, RequestContext], list[Document]],
                 design: Callable[[Any, RequestContext], Design]) -> None:
        self.documents = documents
        self.design = design


class Orchestrator:
    def __init__(self, tasks: TaskStore, progress: ProgressStore,
                 actions: dict[str, ActionDef], designs: DesignSource, ports: Ports,
                 settings: StepSettings, pool: Executor, engine: StepEngine,
                 clock: Callable[[], float],
                 sleep: Callable[[float], None] | None = None, *,
                 attempt_timeout: float | None = None,
                 on_stuck: Callable[[str], None] | None = None) -> None:
        self._tasks = tasks
        self._progress = progress
        self._actions = actions
        self._designs = designs
        self._ports = ports
        self._settings = settings
        self.pool = pool
        self._engine = engine
        self.clock = clock
        self.sleep = sleep  # None: wait for due attempts in real time
        self.attempt_timeout = attempt_timeout  # for steps whose policy sets none
        self._on_stuck = on_stuck  # told the step name of each stuck attempt (a metric)

    def run(self, task: TaskRow, lease: Hold) -> None:
        """Run (or resume) a task we hold the lease of, to complete or terminated."""
        current_marker.set(task.context_marker or "-")
        current_actor.set(worker_actor("drydock", task.created_by))
        row = self._start(task)
        if row is None:
            return
        ctx = RequestContext(marker=task.context_marker or RequestContext().marker,
                             end_user=task.created_by)
        action = self._actions[row.action]
        if action.site is not None and row.status == S.TERMINATING:
            self._tasks.transition(row.id, TaskStatus.TERMINATED, completed=self.clock())
            return
        try:
            if action.site is not None:
                self._run_site_level(row, action, ctx)
                return
            design = self._designs.design(row, ctx)
            ports = self._ports.for_provisioner(design.provisioner)
            ports = replace(ports, erase=TaskDrives(ports.erase))
        except BerthError as exc:
            self._fail_task(row, f"Design {row.design_ref!r} could not be loaded: {exc.message}")
            return
        self._run_nodes(row, action, design, ctx, lease, ports)
        if not lease.lost.is_set():
            self._finish(row)

    def _start(self, task: TaskRow) -> TaskRow | None:
        row = self._tasks.get(task.id)
        if row.status in (S.REQUESTED, S.QUEUED):
            if row.terminate_requested:
                self._tasks.transition(row.id, TaskStatus.TERMINATED, completed=self.clock())
                return None
            return self._tasks.transition(row.id, TaskStatus.RUNNING)
        if row.status in (S.RUNNING, S.TERMINATING):
            LOG.info("Resuming task %s (%s)", row.id, row.status)
            return row
        return None

    def _run_site_level(self, row: TaskRow, action: ActionDef, ctx: RequestContext) -> None:
        assert action.site is not None
        docs = self._designs.documents(row, ctx)
        outcome = action.site(SiteContext(
            documents=docs, options=dict(row.options or {}),
            ports=self._ports.for_provisioner(provisioner_of(docs))
            if action.needs_provisioner else self._ports, request=ctx))
        self._progress.add_messages(row, outcome.messages)
        result = TaskResult.SUCCESS if outcome.ok else TaskResult.FAILURE
        self._tasks.transition(row.id, TaskStatus.COMPLETE, completed=self.clock(),
                               result=result.value, result_message=outcome.message)

    def _fail_task(self, row: TaskRow, message: str) -> None:
        self._progress.add_messages(row, [simple_message(message)])
        target = TaskStatus.TERMINATED if row.status == S.TERMINATING else TaskStatus.COMPLETE
        self._tasks.transition(row.id, target, completed=self.clock(),
                               result=TaskResult.FAILURE.value, result_message=message)

    def _run_nodes(self, row: TaskRow, action: ActionDef, design: Design,
                   ctx: RequestContext, lease: Hold, ports: Ports) -> None:
        names = list(row.node_names or [])
        missing = [n for n in names if n not in design.nodes]
        node_tasks = self._progress.ensure_node_tasks(row, names)
        runs: list[_NodeRun] = []
        for name in names:
            sub = node_tasks[name]
            if sub.status in (S.COMPLETE, S.TERMINATED):
                continue
            if name in missing:
                self._progress.finish(sub, result=TaskResult.FAILURE,
                                      status=TaskStatus.COMPLETE, messages=[simple_message(
                                          f"Node {name} is not in the design", node=name)])
                continue
            if self._skip_retired(action, sub, name):
                continue
            assert action.steps is not None
            options = dict(row.options or {})
            runs.append(_NodeRun(design.nodes[name], sub, options, action.steps(options),
                                 teardown=action.teardown, design_grace=design.power_grace,
                                 ports=ports))
        _Schedule(self, row, ctx, lease, runs).run()

    def _skip_retired(self, action: ActionDef, sub: TaskRow, name: str) -> bool:
        """Retired nodes are never targets of prepare/deploy: skipped (not failed)."""
        records = self._ports.records
        if not action.skip_retired or records is None:
            return False
        retired, reason = records.retired(name)
        if not retired:
            return False
        text = f"{name}: skipped, the node is retired" + (f" ({reason})" if reason else "")
        self._progress.finish(sub, result=TaskResult.INCOMPLETE, status=TaskStatus.COMPLETE,
                              data={"skipped": reason or "retired"},
                              messages=[simple_message(text, error=False, node=name,
                                                       context_type="node", context=name)])
        return True

    def _stop_requested(self, row: TaskRow, lease: Hold) -> bool:
        if lease.lost.is_set():
            return True
        status, terminate, _owner = self._tasks.control(row.id)
        return terminate or status == S.TERMINATING

    def advance(self, row: TaskRow, run: _NodeRun, ctx: RequestContext,
                lease: Hold) -> float | None:
        """Run a node on: its steps in order, each one attempt at a time, skipping those done
        (by a previous worker too). When to come back (a step waits), or None: it ended."""
        current_marker.set(ctx.marker)
        current_actor.set(worker_actor("drydock", ctx.end_user))
        while True:
            if run.step is None and not self._next_step(row, run, ctx, lease):
                if not lease.lost.is_set():
                    self._release_slots(run)  # the node's work in this task ended
                return None
            assert run.step is not None and run.row is not None and run.ctx is not None
            if run.seen.next_at is not None and run.seen.next_at > self.clock():
                return run.seen.next_at  # resumed after a takeover: not due yet
            if run.retake:
                due, go_on = self._retake(row, run)
                if not go_on:
                    return due
            with run.guard:
                if run.stuck:
                    return None
                run.attempt_at = self.clock()
            outcome, seen = self._engine.attempt(run.step, run.ctx, run.seen)
            with run.guard:
                run.attempt_at = None
                if run.stuck:  # failed as stuck meanwhile: this late result is discarded
                    return None
            run.seen = seen
            if lease.lost.is_set():
                return None
            if isinstance(outcome, Retry):
                self._save(row, run, poll=True)
                return run.seen.next_at
            if not self._record(row, run, outcome):
                self._release_slots(run)
                return None

    def _retake(self, row: TaskRow, run: _NodeRun) -> tuple[float | None, bool]:
        """A node resumed after a takeover holds its failure-domain slots again before its
        next step (tasks.budget): (when to come back, False) while another holder has a
        domain, up to `release_timeout`; (None, False) when the node failed; (None, True)
        to go on, the step's own time starting once the slots are held."""
        assert run.ctx is not None
        held = self._ports.budgets.retake(run.ctx, run.blocked) if self._ports.budgets \
            else None
        now = self.clock()
        if isinstance(held, Retry):
            run.waiting_since = run.waiting_since or now
            if now - run.waiting_since <= self._settings.release_timeout:
                return now + held.delay, False
            held = Failed("BudgetExhausted", f"{held.note} (waited "
                          f"{self._settings.release_timeout:g} s after a takeover)")
        if isinstance(held, Failed):
            self._record(row, run, held)
            return None, False
        if run.waiting_since is not None:
            run.seen = replace(run.seen, started=now)
        run.retake = False
        return None, True

    def _release_slots(self, run: _NodeRun) -> None:
        """Give back the node's failure-domain slots taken by this task (tasks.budget)."""
        if self._ports.budgets is not None:
            try:
                self._ports.budgets.release(run.options, run.node.name)
            except Exception:  # the lease frees them anyway
                LOG.exception("Giving back the slots of %s failed", run.node.name)

    def renew_slots(self, task_ids: list[str]) -> None:
        """Extend the failure-domain slots of the running tasks' nodes (worker heartbeat)."""
        if self._ports.budgets is None:
            return
        for task_id in task_ids:
            self._ports.budgets.renew(dict(self._tasks.get(task_id).options or {}))

    def _attempt_policy(self, run: _NodeRun) -> StepPolicy | None:
        if run.step is None or run.ctx is None:
            return None
        policy = run.step.policy(run.ctx)
        if policy.attempt_timeout is None and self.attempt_timeout:
            policy = replace(policy, attempt_timeout=self.attempt_timeout)
        return policy

    def stuck_at(self, run: _NodeRun) -> float | None:
        """When the node's running attempt will be stuck (None: no attempt, or no limit)."""
        with run.guard:
            policy, began = self._attempt_policy(run), run.attempt_at
        if policy is None or began is None or policy.attempt_timeout is None or run.stuck:
            return None
        return began + policy.attempt_timeout

    def fail_if_stuck(self, row: TaskRow, run: _NodeRun) -> bool:
        """A node attempt that ran past its attempt timeout while this worker is alive and
        heartbeating is stuck (its thread cannot be stopped): its step and node fail with
        StepStuck, its late result will be discarded and the step is not run again. True
        when this call found it so."""
        with run.guard:
            policy, began = self._attempt_policy(run), run.attempt_at
            if policy is None or began is None or run.stuck or run.step is None:
                return False
            failed = stuck(run.step.name, run.node.name, policy, began, self.clock())
            if failed is None:
                return False
            run.stuck = True
        LOG.error("%s %s: %s", row.action, run.node.name, failed.message)
        if self._on_stuck is not None:
            self._on_stuck(run.step.name)
        self._record(row, run, failed)
        return True

    def _next_step(self, row: TaskRow, run: _NodeRun, ctx: RequestContext,
                   lease: Hold) -> bool:
        """Start the node's next step not done yet (resuming its saved retry); False when
        none is left (the node succeeded) or the task is to stop."""
        if run.recorded is None:
            run.recorded = self._progress.steps_of(run.sub.id)
            taken = run.recorded.get(BUDGET_STEP)
            run.retake = taken is not None and taken.status == S.COMPLETE  # a takeover
            if run.teardown:
                self._begin_teardown(row, run)
        while run.pending:
            step = run.pending[0]
            done = run.recorded.get(step.name)
            if step.name in run.earlier and done is None:
                done = self._done_earlier(row, run, step.name)
            if done is None or done.status != S.COMPLETE or done.result != R.SUCCESS:
                break
            run.previous[step.name] = done.data
            run.pending.pop(0)
        else:
            self._progress.finish(run.sub, result=TaskResult.SUCCESS,
                                  status=TaskStatus.COMPLETE, teardown=self._teardown(
                                      row, run, lambda r: td.completed(r, row.id, self.clock())))
            return False
        if self._stop_requested(row, lease):
            return False
        step = run.pending.pop(0)
        run.step, run.row = step, self._progress.start_step(run.sub, step.name)
        saved = self._progress.saved_retry(run.row)
        run.seen = Attempts.load(saved) if saved else Attempts.first(self.clock())
        node_ctx = NodeContext(node=run.node, options=run.options,
                               ports=run.ports or self._ports,
                               settings=self._settings, request=ctx, clock=self.clock,
                               previous=run.previous,
                               cancelled=lambda: lease.lost.is_set() or run.stuck,
                               state=self._progress.saved_state(run.row), task=row.id,
                               teardown=run.found if run.teardown else None,
                               design_grace=run.design_grace,
                               design_ref=row.design_ref, action=row.action)
        step_row = run.row
        node_ctx.message = lambda m: self._progress.add_messages(step_row, [m])

        def checkpoint() -> None:
            if lease.lost.is_set():  # another worker holds the task: ask nothing more
                raise Conflict(f"{step.name}: abandoned, another worker holds the task now",
                               reason="Abandoned")
            if run.stuck:  # the step failed as stuck: this late attempt changes nothing more
                raise Conflict(f"{step.name}: abandoned, the attempt was found stuck",
                               reason=STUCK)
            self._save(row, run)

        node_ctx.checkpoint = checkpoint
        run.ctx, run.saved = node_ctx, None
        return True

    def _save(self, row: TaskRow, run: _NodeRun, *, poll: bool = False) -> None:
        """The running step's retry and progress, and what it attested, in one transaction.
        A checkpoint (a write-ahead intent, an answer) is always saved at once. A `poll` that
        changed nothing but the attempt count and when to look again is not saved, up to
        SAVE_EVERY seconds after the last save: a worker taking the step over then resumes
        from that save, its next attempt due at once and the step's timeout counted from the
        older due time (tasks.engine.late), at most SAVE_EVERY seconds more generous."""
        assert run.row is not None and run.ctx is not None
        attested = dict(run.ctx.attested)
        kept = {k: v for k, v in run.seen.to_json().items() if k not in ("attempts", "next_at")}
        what = json.dumps([kept, run.ctx.state, attested], sort_keys=True, default=str)
        now = self.clock()
        if poll and what == run.saved and now - run.saved_at < SAVE_EVERY:
            return
        run.saved, run.saved_at = what, now
        self._progress.save_step(run.row, run.seen.to_json(), run.ctx.state,
                                 teardown=self._teardown(
                                     row, run, lambda r: td.attest(r, row.id, attested))
                                 if attested else None)

    def _teardown(self, row: TaskRow, run: _NodeRun,
                  change: Callable[[dict[str, Any] | None], dict[str, Any] | None]
                  ) -> TeardownUpdate | None:
        return (run.node.name, change) if run.teardown else None

    def _begin_teardown(self, row: TaskRow, run: _NodeRun) -> None:
        """The node's teardown this task works on; steps an earlier task of it did stand."""
        record = self._progress.teardown(run.node.name)
        run.earlier = td.earlier_steps(record, row.id, run.options)
        now = self.clock()
        self._progress.update_teardown((run.node.name, lambda r: td.begin(
            r, row.id, run.options, now)))
        # Read once: only earlier tasks' erases are used from it, and no other task changes
        # the node's record while this one holds the node.
        run.found = self._progress.teardown(run.node.name)

    def _done_earlier(self, row: TaskRow, run: _NodeRun, name: str) -> TaskRow:
        """Record a step that an earlier task of the node's teardown completed as done."""
        earlier = run.earlier[name]
        step_row = self._progress.start_step(run.sub, name)
        text = (f"{run.node.name}: {name} done earlier by task {earlier.get('task')} in this "
                "teardown of the node; not repeated")
        output = {**(earlier.get("output") or {}), "earlier_task": earlier.get("task")}
        self._progress.finish(step_row, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                              data=output, messages=[simple_message(
                                  text, error=False, node=run.node.name, step=name,
                                  context_type="node", context=run.node.name,
                                  earlier_task=earlier.get("task"))])
        step_row.status, step_row.result, step_row.data = S.COMPLETE, R.SUCCESS, output
        return step_row

    def _record(self, row: TaskRow, run: _NodeRun, outcome: Done | Failed) -> bool:
        """Record a step's end; True when the node goes on with its next step."""
        node, step, step_row = run.node, run.step, run.row
        assert step is not None and step_row is not None
        ok = isinstance(outcome, Done)
        message = simple_message(f"{node.name}: {outcome.message}", error=not ok,
                                 node=node.name, step=step.name, context_type="node",
                                 context=node.name, **{k: v for k, v in outcome.details.items()
                                                       if k in MESSAGE_FIELDS})
        result = TaskResult.SUCCESS if ok else TaskResult.FAILURE
        data = outcome.output if isinstance(outcome, Done) else None
        records = [simple_message(f"{node.name}: {r.get('disk', '')} {r.get('result', '')}"
                                  .strip(), error=False, node=node.name, step=step.name,
                                  context_type="node", context=node.name, **r)
                   for r in (outcome.records if isinstance(outcome, Done) else ())]
        attested, now = dict(run.ctx.attested) if run.ctx else {}, self.clock()

        def change(r: dict[str, Any] | None) -> dict[str, Any] | None:
            r = td.attest(r, row.id, attested)
            if ok:
                return td.step_done(r, row.id, step.name, data, now)
            cause = outcome.message if outcome.message.startswith(f"{step.name}:") \
                else f"{step.name}: {outcome.message}"
            return td.stopped(r, row.id, cause, now)

        self._progress.finish(step_row, result=result, status=TaskStatus.COMPLETE,
                              data=data, messages=[message, *records],
                              teardown=self._teardown(row, run, change))
        LOG.info("%s %s %s: %s", row.action, node.name, step.name, outcome.message)
        if not ok:
            self._progress.finish(run.sub, result=TaskResult.FAILURE,
                                  status=TaskStatus.COMPLETE)
            return False
        run.previous[step.name] = data
        run.step, run.row, run.ctx = None, None, None
        return True

    def _finish(self, row: TaskRow) -> None:
        """Count node results; unfinished nodes of a terminated task are marked terminated."""
        subs = [s for s in self._tasks.children([row.id]) if s.step is None]
        ok = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.SUCCESS)
        bad = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.FAILURE)
        unfinished = [s for s in subs if s.status not in (S.COMPLETE, S.TERMINATED)]
        status, terminate, _ = self._tasks.control(row.id)
        stopping = terminate or status == S.TERMINATING
        action = self._actions.get(row.action)
        now = self.clock()
        for sub in unfinished:
            self._progress.finish(sub, result=TaskResult.INCOMPLETE, status=TaskStatus.TERMINATED,
                                  messages=[simple_message(f"{sub.node}: terminated before "
                                                           f"its next step", error=False,
                                                           node=sub.node)],
                                  teardown=(str(sub.node), lambda r: td.stopped(
                                      r, row.id, "terminated before its next step", now))
                                  if action is not None and action.teardown else None)
        skipped = sorted(str(s.node) for s in subs
                         if s.status == S.COMPLETE and s.result == R.INCOMPLETE)
        result = summarize(len(ok), len(bad), len(unfinished) + sum(
            1 for s in subs if s.status == S.TERMINATED))
        if status == S.RUNNING and stopping:
            self._tasks.transition(row.id, TaskStatus.TERMINATING)
        target = TaskStatus.TERMINATED if stopping else TaskStatus.COMPLETE
        self._tasks.transition(row.id, target, completed=self.clock(), result=result.value,
                               successes=ok, failures=bad,
                               result_message=_summary(row.action, ok, bad, skipped))


def _summary(action: str, ok: list[str], bad: list[str], skipped: list[str]) -> str:
    text = f"{action}: {len(ok)} node(s) succeeded, {len(bad)} failed"
    text += f" ({', '.join(bad)})" if bad else ""
    return text + (f", {len(skipped)} skipped ({', '.join(skipped)})" if skipped else "")


class _Schedule:
    """Runs a task's nodes: each node's next attempt goes to the pool when it is due (a heap
    of due times); between attempts no thread is held. Woken when an attempt ends or the lease
    is lost; with a `sleep` (a fake clock) waits for a due time by sleeping instead."""

    def __init__(self, orch: Orchestrator, row: TaskRow, ctx: RequestContext, lease: Hold,
                 runs: list[_NodeRun]) -> None:
        self.o, self.row, self.ctx, self.lease = orch, row, ctx, lease
        self.runs = runs
        self.due: list[tuple[float, int]] = [(orch.clock(), i) for i in range(len(runs))]
        self.running: dict[Future[float | None], int] = {}

    def run(self) -> None:
        while self.due or self.running:
            if self.lease.lost.is_set():
                self.due.clear()
            now = self.o.clock()
            while self.due and self.due[0][0] <= now:
                _, i = heapq.heappop(self.due)
                future = self.o.pool.submit(self.o.advance, self.row, self.runs[i], self.ctx,
                                            self.lease)
                future.add_done_callback(lambda _: self.lease.wake())
                self.running[future] = i
            self._wait(now)
            for future, i in list(self.running.items()):
                if not future.done() and self.o.fail_if_stuck(self.row, self.runs[i]):
                    del self.running[future]  # its thread ends when it ends, unheard
            for future in [f for f in self.running if f.done()]:
                i = self.running.pop(future)
                again = future.result()
                if again is not None and not self.lease.lost.is_set():
                    heapq.heappush(self.due, (again, i))

    def _wait(self, now: float) -> None:
        """Until an attempt ends, the lease is lost or the next attempt is due."""
        delay = max(0.0, self.due[0][0] - now) if self.due else None
        stuck_at = [t for i in self.running.values()
                    if (t := self.o.stuck_at(self.runs[i])) is not None]
        if stuck_at:  # look again when the first running attempt would be stuck
            delay = max(0.0, min([*stuck_at, *([now + delay] if delay is not None else [])])
                        - now)
        if not self.running and self.o.sleep is not None and delay is not None:
            self.o.sleep(delay)
            return
        with self.lease.changed:
            if any(f.done() for f in self.running) or self.lease.lost.is_set():
                return
            if delay is None or delay > 0:
                self.lease.changed.wait(delay)
