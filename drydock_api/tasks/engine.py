"""Runs one node step to its end: retries after transient errors, waits, timeouts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from common.errors import BerthError
from drydock_api.drivers.ports import DriverError
from drydock_api.tasks.outcomes import Done, Failed, NodeContext, Retry, StepDef, StepSettings

LOG = logging.getLogger(__name__)
MAX_RETRY_DELAY = 30.0


def poll_delay(interval: float, elapsed: float, settings: StepSettings) -> float:
    """How long to wait before looking again at an operation that has been in the same
    situation for `elapsed` seconds: `first_poll` at first, then a `poll_backoff` fraction of
    `elapsed` (a geometric backoff: each wait is that fraction longer than the one before), at
    most `interval`, the step's configured poll interval. A change is seen at most
    `first_poll` or `poll_backoff` x its age late, so seconds-long work (the simulated site)
    is followed closely and minutes-long work (real MAAS, BMCs) is polled at `interval`."""
    return min(interval, max(settings.first_poll, settings.poll_backoff * elapsed))


class StepEngine:
    """The only place that sleeps between attempts; steps themselves never loop."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._clock = clock
        self._sleep = sleep

    def run(self, step: StepDef, ctx: NodeContext) -> Done | Failed:
        settings = ctx.settings
        timeout = step.timeout(settings)
        started = self._clock()
        transient, failing_since = 0, 0.0
        note, noted_at = "", started  # the step's situation, and since when it holds
        while True:
            if ctx.cancelled():
                return Failed(f"{step.name}: abandoned, another worker holds the task now")
            try:
                outcome = step.fn(ctx)
            except DriverError as exc:
                failing_since = failing_since if transient else self._clock()
                outage = self._clock() - failing_since
                if exc.transient and (transient < settings.retries
                                      or outage < settings.outage_window):
                    transient += 1
                    self._sleep(min(settings.retry_delay * 2 ** (transient - 1),
                                    MAX_RETRY_DELAY))
                    continue
                tries = f"{transient + 1} tries" + (f" over {outage:.0f} s" if outage >= 1
                                                    else "")
                return Failed(f"{step.name}: {exc.message} ({tries})",
                              details=exc.details or None)
            except BerthError as exc:
                return Failed(f"{step.name}: {exc.message}")
            except ValueError as exc:
                return Failed(f"{step.name}: {exc}")
            except Exception as exc:  # a bug in a step must fail the node, not the worker
                LOG.exception("Step %s on %s raised", step.name, ctx.node.name)
                return Failed(f"{step.name}: internal error: {type(exc).__name__}: {exc}")
            transient = 0  # the outage, if any, is over
            if not isinstance(outcome, Retry):
                return outcome
            now = self._clock()
            if outcome.note != note:  # a request made or a new status: look again soon
                note, noted_at = outcome.note, now
            delay = poll_delay(outcome.delay, now - noted_at, settings)
            if now - started + delay > timeout:
                return Failed(f"{step.name}: timed out after {timeout:g}s ({outcome.note})")
            self._sleep(delay)
