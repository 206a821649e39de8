"""How a background loop logs a failure that repeats (its database, MAAS or Kubernetes away):
the first failure with its traceback, then one line every `every` seconds while the same kind
of failure lasts (how many, for how long, the last error), and one line when the loop works
again. A loop that fails every second for an hour logs about 60 lines, not 3,600
tracebacks; a new kind of failure is logged whole at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

SUMMARY_EVERY = 60.0  # s between the lines of a failure that lasts


class FailureLog:
    """The failures of one loop (`what` names it in every line): `run` one pass, or call
    `failed(exc)` from its `except` block and `ok()` after each pass that worked. Failures of
    the `quiet` types explain themselves and are logged without a traceback."""

    def __init__(self, log: logging.Logger, what: str, *, every: float = SUMMARY_EVERY,
                 clock: Callable[[], float] = time.monotonic,
                 quiet: tuple[type[BaseException], ...] = ()) -> None:
        self._log, self._what, self._every, self._clock = log, what, every, clock
        self._quiet = quiet
        self._lock = threading.Lock()
        self._kind: str | None = None  # the failing kind (exception type), None when working
        self._since = self._said = 0.0
        self._count = 0

    @property
    def failing(self) -> bool:
        return self._kind is not None

    def run(self, work: Callable[[], object]) -> None:
        """One pass of the loop: `work()`, its failure logged here."""
        try:
            work()
        except Exception as exc:
            self.failed(exc)
        else:
            self.ok()

    def failed(self, exc: BaseException) -> None:
        """Log `exc` (with its traceback the first time of its kind, unless quiet)."""
        now, kind = self._clock(), type(exc).__name__
        with self._lock:
            if kind != self._kind:
                self._kind, self._since, self._said, self._count = kind, now, now, 1
                whole = True
            else:
                self._count += 1
                whole = False
                if now - self._said < self._every:
                    return
                self._said = now
            count, lasted = self._count, now - self._since
        if whole:
            trace = None if isinstance(exc, self._quiet) else exc
            self._log.warning("%s failed: %s", self._what, exc, exc_info=trace)
        else:
            self._log.warning("%s still failing: %d failures in %.0f s, the last: %s",
                              self._what, count, lasted, exc)

    def ok(self) -> None:
        with self._lock:
            if self._kind is None:
                return
            count, lasted = self._count, self._clock() - self._since
            self._kind = None
        self._log.info("%s works again after %d failures in %.0f s", self._what, count, lasted)
