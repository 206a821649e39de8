"""Runs one attempt of a node step and decides what comes next: done, failed, or when to try
again (polls back off, transient errors are retried by the step's policy, timeouts). It never
waits: the retry is data (`Attempts`) the orchestrator saves with the step and schedules."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from common.errors import BerthError
from common.workflow import Done, Failed, Retry, backoff_delay, next_attempt
from drydock_api.drivers.ports import BmcAccess, DriverError, EraseInterface, EraseStatus
from drydock_api.tasks.context import NodeContext, NodeStep, StepSettings

LOG = logging.getLogger(__name__)


def poll_delay(interval: float, elapsed: float, settings: StepSettings) -> float:
    """The step's poll schedule: `first_poll`, backing off by `poll_backoff` to `interval`,
    the step's configured poll interval (see common.workflow.backoff_delay)."""
    return backoff_delay(interval, elapsed, first=settings.first_poll,
                         fraction=settings.poll_backoff)


@dataclass(frozen=True)
class Attempts:
    """Where a step stands between attempts, saved with the step (see ProgressStore): when it
    started, attempts made, consecutive transient failures and since when, the situation its
    last answer described (`note`) and since when, and when to run the next attempt."""

    started: float
    attempts: int = 0
    failures: int = 0
    failing_since: float | None = None
    note: str = ""
    noted_at: float = 0.0
    next_at: float | None = None

    @classmethod
    def first(cls, now: float) -> Attempts:
        return cls(started=now, noted_at=now)

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> Attempts:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def late(seen: Attempts, now: float) -> Attempts:
    """The step's clock moved on by how late this attempt is (its worker died and the task
    was taken over after the lease, or the workers were busy): a step's timeout counts the
    time it was given, so a request made by the worker that takes over still gets its wait."""
    if seen.next_at is None or now <= seen.next_at:
        return seen
    return replace(seen, started=seen.started + now - seen.next_at)


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
        seen = replace(late(seen, self._clock()), attempts=seen.attempts + 1, next_at=None)
        try:
            outcome = step.run(ctx)
        except DriverError as exc:
            return self._driver_error(step, ctx, seen, exc)
        except BerthError as exc:
            return Failed(exc.instance_reason, f"{step.name}: {exc.message}"), seen
        except ValueError as exc:
            return Failed("InvalidInput", f"{step.name}: {exc}"), seen
        except Exception as exc:  # a bug in a step must fail the node, not the worker
            LOG.exception("Step %s on %s raised", step.name, ctx.node.name)
            return Failed("InternalError", f"{step.name}: internal error: "
                                           f"{type(exc).__name__}: {exc}"), seen
        seen = replace(seen, failures=0, failing_since=None)  # the outage, if any, is over
        if not isinstance(outcome, Retry):
            return outcome, seen
        now = self._clock()
        if outcome.note != seen.note:  # a request made or a new status: look again soon
            seen = replace(seen, note=outcome.note, noted_at=now)
        delay = poll_delay(outcome.delay, now - seen.noted_at, ctx.settings)
        timeout = step.policy(ctx).timeout
        if now - seen.started + delay > timeout:
            return Failed("Timeout", f"{step.name}: timed out after {timeout:g}s "
                                     f"({outcome.note})"), seen
        return replace(outcome, delay=delay), replace(seen, next_at=now + delay)

    def _driver_error(self, step: NodeStep, ctx: NodeContext, seen: Attempts,
                      exc: DriverError) -> tuple[Failed | Retry, Attempts]:
        now = self._clock()
        since = seen.failing_since if seen.failing_since is not None else now
        seen = replace(seen, failures=seen.failures + 1, failing_since=since)
        due = next_attempt(step.policy(ctx), seen.failures, since, now) if exc.transient \
            else None
        if due is not None:
            return Retry(due - now, f"{step.name}: {exc.message}"), replace(seen, next_at=due)
        outage = now - since
        tries = f"{seen.failures} tries" + (f" over {outage:.0f} s" if outage >= 1 else "")
        return Failed(exc.instance_reason, f"{step.name}: {exc.message} ({tries})",
                      details=exc.details or {}), seen


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
