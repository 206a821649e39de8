"""Runs a claimed task: its nodes in a bounded pool, each node's steps in order, skipping the
steps a previous (dead) worker completed, stopping before the next step on terminate."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from common.context import RequestContext, current_marker
from common.documents import Document
from common.errors import BerthError
from common.status import simple_message
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import ProgressStore
from drydock_api.db.store import TaskStore
from drydock_api.nodes.design import Design, NodeDef
from drydock_api.tasks.actions import ActionDef
from drydock_api.tasks.engine import StepEngine
from drydock_api.tasks.outcomes import (
    Done,
    Failed,
    NodeContext,
    Ports,
    SiteContext,
    StepSettings,
)
from drydock_api.tasks.states import TaskResult, TaskStatus, summarize

LOG = logging.getLogger(__name__)
S, R = TaskStatus, TaskResult  # compare stored statuses with the enums, never strings


@dataclass
class Lease:
    """A worker's hold on a task; `lost` is set when renewal fails (another worker has it)."""

    task_id: str
    lost: threading.Event = field(default_factory=threading.Event)


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
                 clock: Callable[[], float]) -> None:
        self._tasks = tasks
        self._progress = progress
        self._actions = actions
        self._designs = designs
        self._ports = ports
        self._settings = settings
        self._pool = pool
        self._engine = engine
        self._clock = clock

    def run(self, task: TaskRow, lease: Lease) -> None:
        """Run (or resume) a task we hold the lease of, to complete or terminated."""
        current_marker.set(task.context_marker or "-")
        row = self._start(task)
        if row is None:
            return
        ctx = RequestContext(marker=task.context_marker or RequestContext().marker,
                             end_user=task.created_by)
        action = self._actions[row.action]
        if action.site is not None and row.status == S.TERMINATING:
            self._tasks.transition(row.id, TaskStatus.TERMINATED, completed=self._clock())
            return
        try:
            if action.site is not None:
                self._run_site_level(row, action, ctx)
                return
            design = self._designs.design(row, ctx)
        except BerthError as exc:
            self._fail_task(row, f"Design {row.design_ref!r} could not be loaded: {exc.message}")
            return
        self._run_nodes(row, action, design, ctx, lease)
        if not lease.lost.is_set():
            self._finish(row)

    def _start(self, task: TaskRow) -> TaskRow | None:
        row = self._tasks.get(task.id)
        if row.status in (S.REQUESTED, S.QUEUED):
            if row.terminate_requested:
                self._tasks.transition(row.id, TaskStatus.TERMINATED, completed=self._clock())
                return None
            return self._tasks.transition(row.id, TaskStatus.RUNNING)
        if row.status in (S.RUNNING, S.TERMINATING):
            LOG.info("Resuming task %s (%s)", row.id, row.status)
            return row
        return None

    def _run_site_level(self, row: TaskRow, action: ActionDef, ctx: RequestContext) -> None:
        assert action.site is not None
        docs = self._designs.documents(row, ctx)
        outcome = action.site(SiteContext(documents=docs, options=dict(row.options or {}),
                                          ports=self._ports, request=ctx))
        self._progress.add_messages(row, outcome.messages)
        result = TaskResult.SUCCESS if outcome.ok else TaskResult.FAILURE
        self._tasks.transition(row.id, TaskStatus.COMPLETE, completed=self._clock(),
                               result=result.value, result_message=outcome.message)

    def _fail_task(self, row: TaskRow, message: str) -> None:
        self._progress.add_messages(row, [simple_message(message)])
        target = TaskStatus.TERMINATED if row.status == S.TERMINATING else TaskStatus.COMPLETE
        self._tasks.transition(row.id, target, completed=self._clock(),
                               result=TaskResult.FAILURE.value, result_message=message)

    def _run_nodes(self, row: TaskRow, action: ActionDef, design: Design,
                   ctx: RequestContext, lease: Lease) -> None:
        names = list(row.node_names or [])
        missing = [n for n in names if n not in design.nodes]
        node_tasks = self._progress.ensure_node_tasks(row, names)
        futures: list[Future[None]] = []
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
            futures.append(self._pool.submit(self._run_node, row, action, design.nodes[name],
                                             sub, ctx, lease))
        for future in futures:
            future.result()

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

    def _stop_requested(self, row: TaskRow, lease: Lease) -> bool:
        if lease.lost.is_set():
            return True
        status, terminate, _owner = self._tasks.control(row.id)
        return terminate or status == S.TERMINATING

    def _run_node(self, row: TaskRow, action: ActionDef, node: NodeDef, sub: TaskRow,
                  ctx: RequestContext, lease: Lease) -> None:
        current_marker.set(ctx.marker)
        assert action.steps is not None
        options = dict(row.options or {})
        recorded = self._progress.steps_of(sub.id)
        previous: dict[str, Any] = {}
        for step in action.steps(options):
            done = recorded.get(step.name)
            if done is not None and done.status == S.COMPLETE and done.result == R.SUCCESS:
                previous[step.name] = done.data
                continue
            if self._stop_requested(row, lease):
                return
            step_row = self._progress.start_step(sub, step.name)
            nctx = NodeContext(node=node, options=options, ports=self._ports,
                               settings=self._settings, request=ctx, clock=self._clock,
                               previous=previous, cancelled=lease.lost.is_set)
            outcome = self._engine.run(step, nctx)
            if lease.lost.is_set():
                return
            ok = not isinstance(outcome, Failed)
            text = outcome.reason if isinstance(outcome, Failed) else outcome.message
            message = simple_message(f"{node.name}: {text}", error=not ok, node=node.name,
                                     step=step.name, context_type="node", context=node.name)
            result = TaskResult.SUCCESS if ok else TaskResult.FAILURE
            data = None if isinstance(outcome, Failed) else outcome.data
            records = [simple_message(f"{node.name}: {r.get('disk', '')} {r.get('result', '')}"
                                      .strip(), error=False, node=node.name, step=step.name,
                                      context_type="node", context=node.name, **r)
                       for r in (outcome.records if isinstance(outcome, Done) else ())]
            self._progress.finish(step_row, result=result, status=TaskStatus.COMPLETE,
                                  data=data, messages=[message, *records])
            LOG.info("%s %s %s: %s", row.action, node.name, step.name, text)
            if not ok:
                self._progress.finish(sub, result=TaskResult.FAILURE, status=TaskStatus.COMPLETE)
                return
            previous[step.name] = data
        self._progress.finish(sub, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE)

    def _finish(self, row: TaskRow) -> None:
        """Count node results; unfinished nodes of a terminated task are marked terminated."""
        subs = [s for s in self._tasks.children([row.id]) if s.step is None]
        ok = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.SUCCESS)
        bad = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.FAILURE)
        unfinished = [s for s in subs if s.status not in (S.COMPLETE, S.TERMINATED)]
        status, terminate, _ = self._tasks.control(row.id)
        stopping = terminate or status == S.TERMINATING
        for sub in unfinished:
            self._progress.finish(sub, result=TaskResult.INCOMPLETE, status=TaskStatus.TERMINATED,
                                  messages=[simple_message(f"{sub.node}: terminated before "
                                                           f"its next step", error=False,
                                                           node=sub.node)])
        skipped = sorted(str(s.node) for s in subs
                         if s.status == S.COMPLETE and s.result == R.INCOMPLETE)
        result = summarize(len(ok), len(bad), len(unfinished) + sum(
            1 for s in subs if s.status == S.TERMINATED))
        if status == S.RUNNING and stopping:
            self._tasks.transition(row.id, TaskStatus.TERMINATING)
        target = TaskStatus.TERMINATED if stopping else TaskStatus.COMPLETE
        self._tasks.transition(row.id, target, completed=self._clock(), result=result.value,
                               successes=ok, failures=bad,
                               result_message=_summary(row.action, ok, bad, skipped))


def _summary(action: str, ok: list[str], bad: list[str], skipped: list[str]) -> str:
    text = f"{action}: {len(ok)} node(s) succeeded, {len(bad)} failed"
    text += f" ({', '.join(bad)})" if bad else ""
    return text + (f", {len(skipped)} skipped ({', '.join(skipped)})" if skipped else "")

