"""How long the site's work took lately, and when to look for it to be done.

MAAS and the BMCs announce no changes, so a step polls them: soon after it asks for
something, then backing off (common.workflow.backoff_delay). Work of one kind on one site
takes about as long each time (a power-off, a drive's erase, a MAAS deploy of one image), so
`ExpectedWaits` keeps, per step and situation (the step's name and its Retry note), how long
the last few such waits lasted until the step was done. A wait seen end before is polled
around when it ended lately instead of from its start:

- nothing is looked for before LEAD of the shortest recent duration (a poll still comes at
  least every interval, so a failure is seen as soon as before once past the first seconds);
- from there to OVERSHOOT of it, every CLOSE of it (at least a quarter of the first poll),
  so work as quick as lately is seen a twentieth of its duration late, not a tenth;
- then the usual backoff.

Real hardware's minutes-long work loses only the first seconds' polls (the interval caps
every wait); the simulated site's seconds-long work is followed more closely with fewer
polls. The durations are this process's own, in memory: a restarted Drydock polls as before
until it has seen each wait end again."""

from __future__ import annotations

import threading
from collections import deque

from common.workflow import backoff_delay

LEAD = 0.8
CLOSE = 0.05
OVERSHOOT = 1.25
RECENT = 8  # waits of a kind remembered


def poll_after(interval: float, elapsed: float, *, first: float, fraction: float,
               expected: float | None = None) -> float:
    """How long to wait before looking again at work unchanged for `elapsed` seconds, at
    most `interval`: the usual backoff, or around `expected` (the shortest recent duration
    of the same wait) when known."""
    usual = backoff_delay(interval, elapsed, first=first, fraction=fraction)
    if expected is None or elapsed >= OVERSHOOT * expected:
        return usual
    close = max(first / 4, CLOSE * expected)
    until_lead = LEAD * expected - elapsed
    if until_lead > close:
        return min(interval, until_lead)
    return min(usual, close)


class ExpectedWaits:
    """The last RECENT durations of each wait (step name, note) that ended with its step
    done; shared by a process's node steps."""

    def __init__(self, recent: int = RECENT) -> None:
        self._recent = recent
        self._lasted: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def ended(self, step: str, note: str, lasted: float) -> None:
        if not note or lasted < 0:
            return
        with self._lock:
            self._lasted.setdefault((step, note), deque(maxlen=self._recent)).append(lasted)

    def expected(self, step: str, note: str) -> float | None:
        """The shortest recent duration of this wait; None when none ended lately."""
        with self._lock:
            seen = self._lasted.get((step, note))
            return min(seen) if seen else None
