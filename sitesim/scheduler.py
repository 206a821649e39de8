"""A single background thread that runs callbacks after a delay (simulated hardware latency)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

LOG = logging.getLogger(__name__)


class Scheduler:
    """Runs `fn` after `delay` seconds; `stop()` drops whatever is still pending."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="sitesim-scheduler", daemon=True)
        self._thread.start()

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._queue, (self._clock() + max(delay, 0.0), next(self._counter), fn))
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._queue or self._queue[0][0] > self._clock()):
                    timeout = self._queue[0][0] - self._clock() if self._queue else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._queue)
            try:
                fn()
            except Exception:  # a failing simulated event must not stop the others
                LOG.exception("scheduled sitesim event failed")
