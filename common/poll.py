"""One way to wait for a condition: check, give up at a deadline or after so many checks, act
between checks, sleep. Clock and sleep are injected, so the services' waits run on a fake clock
in tests."""

from __future__ import annotations

import math
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


def doubling(first: float, cap: float) -> Callable[[int], float]:
    """Waits of `first` seconds, doubled after each, never above `cap` (a bounded backoff)."""
    return lambda waited: min(first * 2 ** min(waited, 64), cap)


def poll(check: Callable[[], T | NotYet[S]], *, interval: float | Callable[[int], float],
         expire: Callable[[S], T], deadline: float = math.inf, attempts: int | None = None,
         between: Callable[[S], None] | None = None,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep, whole: bool = False) -> T:
    """Call `check` until it returns something other than NotYet, and return that.

    When the deadline has come (with `whole`: when one more full interval would pass it), or
    `check` has answered NotYet `attempts` times, return `expire(seen)` — it may raise
    instead. Otherwise `between(seen)` runs (log, renew a lock, write progress, raise to stop
    early), then the wait: `interval` seconds (or `interval(n)` before the check after the
    n-th wait, counted from 0: see `doubling`), cut at the deadline unless `whole`."""
    waited = 0
    while True:
        result = check()
        if not isinstance(result, NotYet):
            return result
        pause = interval(waited) if callable(interval) else interval
        now = clock()
        if (attempts is not None and waited + 1 >= attempts) or \
                ((now + pause > deadline) if whole else (now >= deadline)):
            return expire(result.seen)
        if between is not None:
            between(result.seen)
        sleep(pause if whole else min(pause, max(0.0, deadline - clock())))
        waited += 1
