"""The one scheduling loop of the services' durable work (Shipyard's actions, Drydock's tasks):
a unit's attempts go to an executor when due; the loop waits for the first to end, the hold to
change or be lost, the next due time or the first running attempt to pass its attempt timeout
(it is then handed over as stuck and its late result discarded). A plan says what is due."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from common.runner import Hold

CHECK_EVERY = 1.0  # running attempts are looked over for stuck ones at most this often (s)
K = TypeVar("K")  # names one piece of work of the unit (a step, a node)
T = TypeVar("T")  # what the work returns


class Watch(Generic[K]):
    """The loop's watch over one piece of work it submitted: when the attempt running now
    began and its attempt timeout, and whether it was found stuck. Work running attempts one
    after another marks each with `begin` and `end`."""

    def __init__(self, key: K) -> None:
        self.key = key
        self._lock = threading.Lock()
        self._began: float | None = None
        self._limit: float | None = None
        self._stuck = False

    @property
    def stuck(self) -> bool:
        """Found stuck: the work changes nothing more (its result is discarded)."""
        return self._stuck

    def begin(self, now: float, limit: float | None) -> bool:
        """An attempt with attempt timeout `limit` (None: no limit) begins at `now`; False
        when the work was found stuck (it does nothing more)."""
        with self._lock:
            if self._stuck:
                return False
            self._began, self._limit = now, limit
            return True

    def end(self) -> bool:
        """The attempt returned; False when it was found stuck meanwhile (discard its result)."""
        with self._lock:
            self._began = None
            return not self._stuck

    def stuck_at(self) -> float | None:
        """When the running attempt will be stuck (None: none runs, or it has no limit)."""
        with self._lock:
            if self._stuck or self._began is None or self._limit is None:
                return None
            return self._began + self._limit

    def check(self, now: float) -> float | None:
        """Mark the work stuck when its running attempt ran past its attempt timeout; when
        that attempt began, or None while it may still run."""
        with self._lock:
            if (self._stuck or self._began is None or self._limit is None
                    or now - self._began <= self._limit):
                return None
            self._stuck = True
            return self._began


@dataclass(frozen=True)
class Start(Generic[K, T]):
    """A piece of work to submit. Unless `marks`, it is one attempt, timed from its submission
    with attempt timeout `limit`; with `marks` it marks its attempts itself (Watch.begin)."""

    key: K
    work: Callable[[Watch[K]], T]
    limit: float | None = None
    marks: bool = False


class Plan(Protocol[K, T]):
    """What differs between the engines: what is due, and what an end or a stuck attempt
    means. Called from the loop's thread only."""

    def due(self, now: float, running: Collection[K]) -> list[Start[K, T]] | None:
        """The work to start now (`running`: the keys running); None: the unit is over."""

    def next_due(self) -> float | None:
        """While work runs, when more is due (None: look again when one ends)."""

    def idle(self, now: float) -> float | None:
        """Nothing runs: when to look again (the loop waits till then); None: stop."""

    def ended(self, key: K, result: T) -> None:
        """A piece of work returned `result`."""

    def stuck(self, key: K, began: float, now: float) -> None:
        """The attempt of `key` begun at `began` ran past its attempt timeout while the worker
        lives (a thread cannot be stopped): whatever it returns later is discarded."""


class Schedule(Generic[K, T]):
    """Runs one unit's work until the plan says it is over, or the hold is lost and nothing
    runs any more (a lost hold submits nothing more). `sleep` (a fake clock's) replaces the
    wait for a due time while nothing runs; `slice_seconds` bounds a wait while work runs."""

    def __init__(self, plan: Plan[K, T], pool: Executor, hold: Hold, *,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] | None = None,
                 slice_seconds: float | None = None) -> None:
        self._plan, self._pool, self._hold = plan, pool, hold
        self._clock, self._sleep, self._slice = clock, sleep, slice_seconds
        self.running: dict[Future[T], Watch[K]] = {}
        self.abandoned = False  # an attempt was found stuck: its thread ends when it ends
        self._lost_seen = False
        self._ended: deque[Future[T]] = deque()  # told by each future as it ends
        self._marking: set[Future[T]] = set()  # running work that marks its own attempts
        self._stuck_at: float | None = None  # when the first running attempt known is stuck
        self._scanned_at = float("-inf")  # when the running attempts were last looked over

    def run(self) -> None:
        while True:
            now = self._clock()
            if self._hold.lost.is_set():
                if not self.running:
                    return
            else:
                starts = self._plan.due(now, [w.key for w in self.running.values()])
                if starts is None:
                    return
                for start in starts:
                    self._submit(start, now)
            if self.running:
                self._wait(now)
                self._collect()
                continue
            again = self._plan.idle(now)
            if again is None:
                return
            self._pause(max(0.0, again - now))

    def _submit(self, start: Start[K, T], now: float) -> None:
        watch: Watch[K] = Watch(start.key)
        if not start.marks:
            watch.begin(now, start.limit)
            if start.limit is not None:
                at = now + start.limit
                self._stuck_at = at if self._stuck_at is None else min(self._stuck_at, at)
        future = self._pool.submit(start.work, watch)
        self.running[future] = watch
        if start.marks:
            self._marking.add(future)
        future.add_done_callback(self._end)

    def _end(self, future: Future[T]) -> None:
        self._ended.append(future)
        self._hold.wake()

    def _wait(self, now: float) -> None:
        """Until work ends, the hold is lost (noticed once), the next due time, the first
        running attempt known would be stuck, the next look for stuck attempts while work
        that marks its own runs (it may have begun one since the last look), or the slice is
        over."""
        times = [self._stuck_at] if self._stuck_at is not None else []
        times += [self._scanned_at + CHECK_EVERY] if self._marking else []
        due = None if self._hold.lost.is_set() else self._plan.next_due()
        times += [due] if due is not None else []
        times += [now + self._slice] if self._slice is not None else []
        delay = max(0.0, min(times) - now) if times else None
        with self._hold.changed:
            if self._ended:
                return
            if self._hold.lost.is_set() and not self._lost_seen:
                self._lost_seen = True
                return
            if delay is None or delay > 0:
                self._hold.changed.wait(delay)

    def _pause(self, delay: float) -> None:
        """Nothing runs: until the next due time (or the hold is lost)."""
        if self._sleep is not None:
            self._sleep(delay)
            return
        with self._hold.changed:
            if not self._hold.lost.is_set() and delay > 0:
                self._hold.changed.wait(delay)

    def _collect(self) -> None:
        """The ended work to the plan; then the stuck attempts, when the first one known is
        due or CHECK_EVERY seconds after the last look (work that marks its own attempts may
        have begun one meanwhile): one pass over the running work, not one at each end (a
        task runs hundreds of nodes at once)."""
        while self._ended:
            future = self._ended.popleft()
            watch = self.running.pop(future, None)  # None: found stuck, its result discarded
            self._marking.discard(future)
            if watch is not None:
                self._plan.ended(watch.key, future.result())
        now = self._clock()
        if ((self._stuck_at is not None and now >= self._stuck_at)
                or now - self._scanned_at >= CHECK_EVERY):
            self._check_stuck(now)

    def _check_stuck(self, now: float) -> None:
        """Hand the attempts past their attempt timeout to the plan as stuck; note when the
        first of the others would be."""
        soonest: float | None = None
        for future, watch in list(self.running.items()):
            began = None if future.done() else watch.check(now)
            if began is not None:
                del self.running[future]  # its late result is never looked at
                self._marking.discard(future)
                self.abandoned = True
                self._plan.stuck(watch.key, began, now)
            elif (at := watch.stuck_at()) is not None:
                soonest = at if soonest is None else min(soonest, at)
        self._stuck_at, self._scanned_at = soonest, now
