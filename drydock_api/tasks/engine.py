"""Runs one attempt of a node step and decides what comes next: done, failed, or when to try
again (polls back off, transient errors are retried by the step's policy, timeouts). It never
waits: the retry is data (`Attempts`) the orchestrator saves with the step and schedules."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from common.engine import Attempts, begin, judge
from common.errors import BerthError
from common.workflow import Done, Failed, Outcome, Retry, backoff_delay
from drydock_api.drivers.ports import BmcAccess, EraseInterface, EraseStatus
from drydock_api.tasks.context import NodeContext, NodeStep, StepSettings

LOG = logging.getLogger(__name__)


def poll_delay(interval: float, elapsed: float, settings: StepSettings) -> float:
    """The step's poll schedule: `first_poll`, backing off by `poll_backoff` to `interval`,
    the step's configured poll interval (see common.workflow.backoff_delay)."""
    return backoff_delay(interval, elapsed, first=settings.first_poll,
                         fraction=settings.poll_backoff)


class StepEngine:
    """One attempt per call; steps themselves never loop and nothing here sleeps."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def attempt(self, step: NodeStep, ctx: NodeContext,
                seen: Attempts) -> tuple[Done | Failed | Retry, Attempts]:
        """Run the step once after `seen`; the outcome (a Retry's delay already follows the
        poll schedule or the retry policy) and the attempts to save for the next one."""
        if ctx.cancelled():
            return Failed("Abandoned", f"{step.name}: abandoned, another worker holds the task "
                                       f"now"), seen
        seen = begin(seen, self._clock())
        result: Outcome | BaseException
        try:
            result = step.run(ctx)
        except Exception as exc:  # judged: a bug in a step fails the node, not the worker
            if not isinstance(exc, BerthError | ValueError):
                LOG.exception("Step %s on %s raised", step.name, ctx.node.name)
            result = exc

        def poll(outcome: Retry, state: Attempts, now: float) -> float:
            return poll_delay(outcome.delay, now - state.noted_at, ctx.settings)

        return judge(step.name, step.policy(ctx), seen, result, self._clock(), poll=poll)


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
