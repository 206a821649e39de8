"""How a Drydock task starts (or resumes after a takeover) and ends: its retired nodes skipped,
its nodes' results counted, those a terminate left unfinished marked terminated, its summary."""

from __future__ import annotations

import logging
from collections.abc import Callable

from common.status import simple_message
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import ProgressStore
from drydock_api.db.states import TaskResult, TaskStatus, summarize
from drydock_api.db.store import TaskStore
from drydock_api.tasks import teardown as td
from drydock_api.tasks.actions import ActionDef
from drydock_api.tasks.context import NodeRecords

LOG = logging.getLogger(__name__)
S, R = TaskStatus, TaskResult


class TaskEnds:
    """A task's row at its start and its end, and its nodes' rows before they run and after."""

    def __init__(self, tasks: TaskStore, progress: ProgressStore,
                 actions: dict[str, ActionDef], clock: Callable[[], float]) -> None:
        self._tasks, self._progress, self._actions = tasks, progress, actions
        self._clock = clock

    def start(self, task: TaskRow) -> TaskRow | None:
        """The task to run: started, or resumed (taken over); None when there is none."""
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

    def skip_retired(self, action: ActionDef, sub: TaskRow, name: str,
                     records: NodeRecords | None) -> bool:
        """Retired nodes are never targets of prepare/deploy: skipped (not failed)."""
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

    def fail(self, row: TaskRow, message: str) -> None:
        """The task ends failed before its nodes ran (e.g. its design did not load)."""
        self._progress.add_messages(row, [simple_message(message)])
        target = TaskStatus.TERMINATED if row.status == S.TERMINATING else TaskStatus.COMPLETE
        self._tasks.transition(row.id, target, completed=self._clock(),
                               result=TaskResult.FAILURE.value, result_message=message)

    def finish(self, row: TaskRow) -> None:
        """Count node results; unfinished nodes of a terminated task are marked terminated."""
        subs = [s for s in self._tasks.children([row.id]) if s.step is None]
        ok = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.SUCCESS)
        bad = sorted(str(s.node) for s in subs if s.status == S.COMPLETE and s.result == R.FAILURE)
        unfinished = [s for s in subs if s.status not in (S.COMPLETE, S.TERMINATED)]
        status, terminate, _ = self._tasks.control(row.id)
        stopping = terminate or status == S.TERMINATING
        action = self._actions.get(row.action)
        now = self._clock()
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
        self._tasks.transition(row.id, target, completed=self._clock(), result=result.value,
                               successes=ok, failures=bad,
                               result_message=_summary(row.action, ok, bad, skipped))


def _summary(action: str, ok: list[str], bad: list[str], skipped: list[str]) -> str:
    text = f"{action}: {len(ok)} node(s) succeeded, {len(bad)} failed"
    text += f" ({', '.join(bad)})" if bad else ""
    return text + (f", {len(skipped)} skipped ({', '.join(skipped)})" if skipped else "")
