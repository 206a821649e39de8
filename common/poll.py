"""One way to wait for a condition: check, give up at a deadline, act between checks, sleep.
Clock and sleep are injected, so the services' waits run on a fake clock in tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True)
class NotYet(Generic[S]):
    """What a check returns while its condition does not hold: what it saw (handed to
    `between` and, at the deadline, to `expire`)."""

    seen: S = None  # type: ignore[assignment]


def poll(check: Callable[[], T | NotYet[S]], *, deadline: float, interval: float,
         expire: Callable[[S], T], between: Callable[[S], None] | None = None,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep, whole: bool = False) -> T:
    """Call `check` until it returns something other than NotYet, and return that.

    When the deadline has come (with `whole`: when one more full interval would pass it),
    return `expire(seen)` — it may raise instead. Otherwise `between(seen)` runs (log, renew
    a lock, write progress, raise to stop early), then the wait: `interval` seconds, cut at
    the deadline unless `whole`."""
    while True:
        result = check()
        if not isinstance(result, NotYet):
            return result
        now = clock()
        if (now + interval > deadline) if whole else (now >= deadline):
            return expire(result.seen)
        if between is not None:
            between(result.seen)
        sleep(interval if whole else min(interval, max(0.0, deadline - clock())))
