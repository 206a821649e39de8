"""Drydock's side of the one engine's attempt cycle (common.journal): a node step's attempt is
judged with the step's poll schedule (polls back off, transient errors are retried by the
step's policy, timeouts), and its outcome kept through `NodeJournal`, the adapter onto the
task's progress store (ProgressStore.save_step while it waits, ProgressStore.finish as it
ends). Nothing here waits: the retry is data the orchestrator schedules."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from common.engine import Attempts, begin
from common.errors import BerthError
from common.journal import Journal, Judged, Result, attempt, run_step
from common.status import simple_message
from common.workflow import Done, Failed, Retry
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import NextStep, ProgressStore, TeardownUpdate
from drydock_api.db.states import TaskResult, TaskStatus
from drydock_api.drivers.ports import BmcAccess, EraseInterface, EraseStatus
from drydock_api.tasks import teardown as td
from drydock_api.tasks.chains import NodeRun
from drydock_api.tasks.context import NodeContext, NodeStep, StepSettings
from drydock_api.tasks.waits import ExpectedWaits, poll_after

LOG = logging.getLogger(__name__)
K = TypeVar("K")  # what a journal knows a node's step by
MESSAGE_FIELDS = ("power",)  # a step's details its message carries (what power-off it got)
SAVE_EVERY = 5.0  # a waiting step's unchanged retry is saved at least this often (s)


def poll_delay(interval: float, elapsed: float, settings: StepSettings,
               expected: float | None = None) -> float:
    """The step's poll schedule: `first_poll`, backing off by `poll_backoff` to `interval`,
    the step's configured poll interval; around `expected` when the same wait ended lately
    (tasks.waits)."""
    return poll_after(interval, elapsed, first=settings.first_poll,
                      fraction=settings.poll_backoff, expected=expected)


class StepEngine:
    """One attempt per call; steps themselves never loop and nothing here sleeps. With
    `waits`, a step done after waiting tells how long its last wait lasted, and the same wait
    is polled around that next time (tasks.waits)."""

    def __init__(self, waits: ExpectedWaits | None = None) -> None:
        self.waits = waits

    def cycle(self, step: NodeStep, ctx: NodeContext, journal: Journal[K], key: K, *,
              kept: Callable[[], bool] | None = None) -> Judged | None:
        """One attempt of the step through the common cycle, kept in `journal` under `key`
        (None: the task is held elsewhere now or the attempt's result no longer counts)."""
        if ctx.cancelled():  # another worker holds the task now, or the attempt was stuck
            return None

        def run() -> Result:
            result = run_step(step, ctx)  # a bug in a step fails the node, not the worker
            if isinstance(result, Exception) and not isinstance(result, BerthError | ValueError):
                LOG.error("Step %s on %s raised", step.name, ctx.node.name, exc_info=result)
            return result

        def poll(outcome: Retry, state: Attempts, now: float) -> float:
            expected = self.waits.expected(step.name, outcome.note) if self.waits else None
            return poll_delay(outcome.delay, now - state.noted_at, ctx.settings, expected)

        judged = attempt(step, ctx, journal, key, poll=poll, run=run, kept=kept)
        if (self.waits is not None and judged is not None and judged.error is None
                and isinstance(judged.outcome, Done)):  # its last wait (if any) ended
            self.waits.ended(step.name, judged.state.note, judged.at - judged.state.noted_at)
        return judged


def teardown_change(run: NodeRun, change: Callable[[dict[str, Any] | None],
                                                   dict[str, Any] | None]
                    ) -> TeardownUpdate | None:
    """The change of the node's teardown record, when the task is a teardown."""
    return (run.node.name, change) if run.teardown else None


class NodeJournal:
    """The journal of a task's node steps (common.journal.Journal, a step known by its
    NodeRun). An attempt's begin is held in memory, not written: a step writes its intent
    before an effect itself (NodeContext.checkpoint), and a poll writes nothing until it is
    judged. A waiting step's retry and progress are saved (`save`), an ended step's result,
    messages and output recorded and the node's next step started (`end`)."""

    def __init__(self, progress: ProgressStore, task: TaskRow,
                 clock: Callable[[], float]) -> None:
        self._progress, self._task, self._clock = progress, task, clock

    def now(self) -> float:
        return self._clock()

    def begun(self, run: NodeRun, now: float) -> Attempts:
        return begin(run.seen, now)

    def waiting(self, run: NodeRun, judged: Judged) -> None:
        run.seen = judged.state
        self.save(run, poll=True)

    def done(self, run: NodeRun, judged: Judged) -> None:
        run.seen = judged.state
        assert isinstance(judged.outcome, Done)
        self.end(run, judged.outcome)

    def failed(self, run: NodeRun, judged: Judged) -> None:
        run.seen = judged.state
        assert isinstance(judged.outcome, Failed)
        self.end(run, judged.outcome)

    def save(self, run: NodeRun, *, poll: bool = False) -> None:
        """The running step's retry and progress, and what it attested, in one transaction.
        A checkpoint (a write-ahead intent, a failed request) is always saved at once; an
        accepted request with the next checkpoint or the attempt's own save. A `poll` that
        changed nothing but the attempt count and when to look again is not saved, up to
        SAVE_EVERY seconds after the last save: a worker taking the step over then resumes
        from that save, its next attempt due at once and the step's timeout counted from the
        older due time (common.engine.late), at most SAVE_EVERY seconds more generous."""
        assert run.row is not None and run.ctx is not None
        attested, task = dict(run.ctx.attested), self._task.id
        kept = {k: v for k, v in run.seen.to_json().items() if k not in ("attempts", "next_at")}
        what = json.dumps([kept, run.ctx.state, attested], sort_keys=True, default=str)
        now = self._clock()
        if poll and what == run.saved and now - run.saved_at < SAVE_EVERY:
            return
        run.saved, run.saved_at = what, now
        self._progress.save_step(run.row, run.seen.to_json(), run.ctx.state,
                                 teardown=teardown_change(
                                     run, lambda r: td.attest(r, task, attested))
                                 if attested else None)

    def end(self, run: NodeRun, outcome: Done | Failed) -> bool:
        """Record a step's end; True when the node goes on with its next step."""
        row, node, step, step_row = self._task, run.node, run.step, run.row
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
        attested, now = dict(run.ctx.attested) if run.ctx else {}, self._clock()

        def change(r: dict[str, Any] | None) -> dict[str, Any] | None:
            r = td.attest(r, row.id, attested)
            if ok:
                return td.step_done(r, row.id, step.name, data, now)
            cause = outcome.message if outcome.message.startswith(f"{step.name}:") \
                else f"{step.name}: {outcome.message}"
            return td.stopped(r, row.id, cause, now)

        run.started = self._progress.finish(
            step_row, result=result, status=TaskStatus.COMPLETE, data=data,
            messages=[message, *records], teardown=teardown_change(run, change),
            then=self._next_start(run) if ok else None)
        LOG.info("%s %s %s: %s", row.action, node.name, step.name, outcome.message)
        if not ok:
            self._progress.finish(run.sub, result=TaskResult.FAILURE,
                                  status=TaskStatus.COMPLETE)
            return False
        run.previous[step.name] = data
        run.step, run.row, run.ctx = None, None, None
        return True

    def _next_start(self, run: NodeRun) -> NextStep | None:
        """The node's next step when it can start in the transaction that ends the current
        one: a step neither a worker before this one nor an earlier task of the teardown began."""
        if not run.pending or run.recorded is None:
            return None
        name = run.pending[0].name
        if name in run.recorded or name in run.earlier:
            return None
        return NextStep(run.sub, name, self._task.id)


class TaskDrives:
    """A task's view of its BMCs' drive erasing: which drives a BMC can erase is asked once
    per BMC for the task's life (its plan and its wipe both need it; a Redfish listing is a
    request per storage and drive) and answered again from memory; what changes (erases
    started, their tasks) is always asked. A worker that takes the task over asks afresh."""

    def __init__(self, erase: EraseInterface) -> None:
        self._erase = erase
        self._drives: dict[BmcAccess, dict[str, str]] = {}
        self._lock = threading.Lock()

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        with self._lock:
            known = self._drives.get(bmc)
        if known is None:
            known = self._erase.erasable_drives(bmc)  # a failure is not remembered
            with self._lock:
                self._drives[bmc] = known
        return dict(known)

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        return self._erase.secure_erase(bmc, drive)

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        return self._erase.erase_status(bmc, task)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        return self._erase.find_erase(bmc, drive)
