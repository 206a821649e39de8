"""Runs a claimed task: its nodes in a bounded pool, each node's steps in order, skipping the
steps a previous (dead) worker completed, stopping before the next step on terminate."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from functools import partial
from typing import Any

from common.audit import current_actor, worker_actor
from common.context import RequestContext, current_marker
from common.documents import Document
from common.engine import STUCK, Attempts, stuck
from common.errors import BerthError, Conflict
from common.runner import Hold
from common.schedule import Schedule, Watch
from common.status import simple_message
from common.workflow import Failed, Retry, StepPolicy
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import ProgressStore
from drydock_api.db.states import TaskResult, TaskStatus
from drydock_api.db.store import TaskStore
from drydock_api.nodes.design import Design, provisioner_of
from drydock_api.tasks import teardown as td
from drydock_api.tasks.actions import ActionDef
from drydock_api.tasks.budget import STEP as BUDGET_STEP
from drydock_api.tasks.chains import NodeChains, NodeRun
from drydock_api.tasks.context import (
    NodeContext,
    Ports,
    SiteContext,
    StepSettings,
)
from drydock_api.tasks.engine import NodeJournal, StepEngine, TaskDrives, teardown_change
from drydock_api.tasks.taskends import TaskEnds

LOG = logging.getLogger(__name__)
S, R = TaskStatus, TaskResult  # compare stored statuses with the enums, never strings


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
        self.engine = engine
        self.clock = clock
        self.sleep = sleep  # None: wait for due attempts in real time
        self.attempt_timeout = attempt_timeout  # for steps whose policy sets none
        self._on_stuck = on_stuck  # told the step name of each stuck attempt (a metric)
        self._ends = TaskEnds(tasks, progress, actions, clock)

    def run(self, task: TaskRow, lease: Hold) -> None:
        """Run (or resume) a task we hold the lease of, to complete or terminated."""
        current_marker.set(task.context_marker or "-")
        current_actor.set(worker_actor("drydock", task.created_by))
        row = self._ends.start(task)
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
            self._ends.fail(row, f"Design {row.design_ref!r} could not be loaded: {exc.message}")
            return
        self._run_nodes(row, action, design, ctx, lease, ports)
        if not lease.lost.is_set():
            self._ends.finish(row)

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

    def _run_nodes(self, row: TaskRow, action: ActionDef, design: Design,
                   ctx: RequestContext, lease: Hold, ports: Ports) -> None:
        names = list(row.node_names or [])
        missing = [n for n in names if n not in design.nodes]
        node_tasks = self._progress.ensure_node_tasks(row, names)
        runs: list[NodeRun] = []
        for name in names:
            sub = node_tasks[name]
            if sub.status in (S.COMPLETE, S.TERMINATED):
                continue
            if name in missing:
                self._progress.finish(sub, result=TaskResult.FAILURE,
                                      status=TaskStatus.COMPLETE, messages=[simple_message(
                                          f"Node {name} is not in the design", node=name)])
                continue
            if self._ends.skip_retired(action, sub, name, self._ports.records):
                continue
            assert action.steps is not None
            options = dict(row.options or {})
            runs.append(NodeRun(design.nodes[name], sub, options, action.steps(options),
                                 teardown=action.teardown, design_grace=design.power_grace,
                                 ports=ports))
        chains = NodeChains(runs, self.clock(), partial(self.advance, row, ctx=ctx, lease=lease),
                            partial(self._stuck, row))
        Schedule(chains, self.pool, lease, clock=self.clock, sleep=self.sleep).run()

    def _stop_requested(self, row: TaskRow, lease: Hold) -> bool:
        if lease.lost.is_set():
            return True
        status, terminate, _owner = self._tasks.control(row.id)
        return terminate or status == S.TERMINATING

    def advance(self, row: TaskRow, run: NodeRun, watch: Watch[int], *, ctx: RequestContext,
                lease: Hold) -> float | None:
        """Run a node on: its steps in order, each one attempt at a time (marked on `watch`),
        skipping those done (by a previous worker too). When to come back (a step waits), or
        None: it ended."""
        run.watch = watch
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
            policy = self._attempt_policy(run)
            if not watch.begin(self.clock(), policy.attempt_timeout if policy else None):
                return None
            judged = self.engine.cycle(  # discarded when found stuck meanwhile, or held elsewhere
                run.step, run.ctx, self._journal(row), run,
                kept=lambda: watch.end() and not lease.lost.is_set())
            if judged is None:
                return None
            if isinstance(judged.outcome, Retry):
                return run.seen.next_at
            if isinstance(judged.outcome, Failed):
                self._release_slots(run)
                return None

    def _retake(self, row: TaskRow, run: NodeRun) -> tuple[float | None, bool]:
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
            self._journal(row).end(run, held)
            return None, False
        if run.waiting_since is not None:
            run.seen = replace(run.seen, started=now)
        run.retake = False
        return None, True

    def _release_slots(self, run: NodeRun) -> None:
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

    def _attempt_policy(self, run: NodeRun) -> StepPolicy | None:
        if run.step is None or run.ctx is None:
            return None
        policy = run.step.policy(run.ctx)
        if policy.attempt_timeout is None and self.attempt_timeout:
            policy = replace(policy, attempt_timeout=self.attempt_timeout)
        return policy

    def _stuck(self, row: TaskRow, run: NodeRun, began: float, now: float) -> None:
        """A node attempt that ran past its attempt timeout while this worker is alive and
        heartbeating is stuck (its thread cannot be stopped): its step and node fail with
        StepStuck, its late result is discarded and the step is not run again."""
        policy = self._attempt_policy(run)
        assert policy is not None and run.step is not None
        failed = stuck(run.step.name, run.node.name, policy, began, now)
        assert failed is not None
        LOG.error("%s %s: %s", row.action, run.node.name, failed.message)
        if self._on_stuck is not None:
            self._on_stuck(run.step.name)
        self._journal(row).end(run, failed)

    def _next_step(self, row: TaskRow, run: NodeRun, ctx: RequestContext,
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
                                  status=TaskStatus.COMPLETE, teardown=teardown_change(
                                      run, lambda r: td.completed(r, row.id, self.clock())))
            return False
        started, run.started = run.started, None  # the stop was checked as it started
        if lease.lost.is_set() or (started is None and self._stop_requested(row, lease)):
            return False
        step = run.pending.pop(0)
        run.step = step
        run.row = started if started is not None and started.step == step.name \
            else self._progress.start_step(run.sub, step.name)
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
        step_row, journal = run.row, self._journal(row)
        node_ctx.message = lambda m: self._progress.add_messages(step_row, [m])

        def checkpoint() -> None:
            if lease.lost.is_set():  # another worker holds the task: ask nothing more
                raise Conflict(f"{step.name}: abandoned, another worker holds the task now",
                               reason="Abandoned")
            if run.stuck:  # the step failed as stuck: this late attempt changes nothing more
                raise Conflict(f"{step.name}: abandoned, the attempt was found stuck",
                               reason=STUCK)
            journal.save(run)

        node_ctx.checkpoint = checkpoint
        run.ctx, run.saved = node_ctx, None
        return True

    def _begin_teardown(self, row: TaskRow, run: NodeRun) -> None:
        """The node's teardown this task works on; steps an earlier task of it did stand."""
        record = self._progress.teardown(run.node.name)
        run.earlier = td.earlier_steps(record, row.id, run.options)
        now = self.clock()
        self._progress.update_teardown((run.node.name, lambda r: td.begin(
            r, row.id, run.options, now)))
        # Read once: only earlier tasks' erases are used from it, and no other task changes
        # the node's record while this one holds the node.
        run.found = self._progress.teardown(run.node.name)

    def _done_earlier(self, row: TaskRow, run: NodeRun, name: str) -> TaskRow:
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

    def _journal(self, row: TaskRow) -> NodeJournal:
        """The journal of the task's node steps (tasks.engine.NodeJournal)."""
        return NodeJournal(self._progress, row, self.clock)
