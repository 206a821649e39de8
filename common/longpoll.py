"""Long-poll waits: a request holds its thread until what it watches changes, a bounded time.

A waiter checks its condition at once, again whenever this process has committed a write
(`notify`, hooked to the database engine by `notify_on_commit`), and every `recheck` seconds
for writes of other processes (more API processes or workers on one database). At
most `max_waiters` requests wait at a time, so long-polls never take every worker thread: a
request over the cap is answered at once with what is true now.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

from common.errors import BadRequest
from common.status import simple_message

_local = threading.local()  # set while a waiter checks its condition: its reads wake nobody
WROTE = "berth_committed"


class Woken(Enum):
    CHANGED = "changed"
    TIMEOUT = "timeout"
    BUSY = "busy"  # over the cap: not waited


class ChangeWaiters:
    """Threads waiting for a condition; `notify()` makes each look again."""

    def __init__(self, *, max_waiters: int, recheck: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_waiters = max_waiters
        self.recheck = recheck
        self._clock = clock
        self._cond = threading.Condition()
        self._generation = 0
        self._waiting = 0

    @property
    def waiting(self) -> int:
        with self._cond:
            return self._waiting

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """Hold one of the `max_waiters` places (True) while waiting on something else (a
        Kubernetes watch); False over the cap: answer at once."""
        with self._cond:
            free = self._waiting < self.max_waiters
            self._waiting += free
        try:
            yield free
        finally:
            if free:
                with self._cond:
                    self._waiting -= 1

    def notify(self) -> None:
        """Something changed in this process: every waiter checks its condition again."""
        if getattr(_local, "checking", False):
            return
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def wait(self, changed: Callable[[], bool], timeout: float) -> Woken:
        """Until `changed()` holds (CHANGED) or `timeout` seconds passed (TIMEOUT); BUSY at once
        when `max_waiters` requests already wait. `changed` runs outside any lock."""
        with self._cond:  # before the first look: a change during it is not missed
            seen = self._generation
        if _check(changed):
            return Woken.CHANGED
        if timeout <= 0:
            return Woken.TIMEOUT
        with self._cond:
            if self._waiting >= self.max_waiters:
                return Woken.BUSY
            self._waiting += 1
        try:
            deadline = self._clock() + timeout
            while True:
                left = deadline - self._clock()
                if left <= 0:
                    return Woken.TIMEOUT
                with self._cond:
                    if self._generation == seen:
                        self._cond.wait(min(left, self.recheck))
                    seen = self._generation
                if _check(changed):
                    return Woken.CHANGED
        finally:
            with self._cond:
                self._waiting -= 1


def wait_params(wait: str | None, since: str | None, max_wait: float,
                version_pattern: str = "") -> tuple[float, str | None]:
    """The `wait` (seconds, capped at `max_wait`) and `since` (a version) of a long-poll
    request; 400 listing every problem."""
    problems = []
    seconds = 0.0
    if wait is not None:
        try:
            seconds = float(wait)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            problems.append(f"wait must be a number of seconds >= 0, got {wait[:40]!r}")
    if since is not None and not (0 < len(since) <= 64 and since.replace(".", "").isdigit()):
        problems.append(f"since must be a version from an earlier answer, got {since[:40]!r}")
    if problems:
        raise BadRequest("; ".join(problems), messages=[simple_message(p) for p in problems])
    return min(max(seconds, 0.0), max_wait), since


def _check(changed: Callable[[], bool]) -> bool:
    _local.checking = True
    try:
        return changed()
    finally:
        _local.checking = False


def notify_on_commit(engine: Engine, waiters: ChangeWaiters) -> None:
    """Wake `waiters` once a transaction this process committed on `engine` is visible: the
    commit marks its connection, which notifies when it returns to the pool (after the
    commit, so a woken waiter reads the new rows)."""

    def committed(conn: Connection) -> None:
        conn.info[WROTE] = True

    def checked_in(_dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        if record.info.pop(WROTE, False):
            waiters.notify()

    event.listen(engine, "commit", committed)
    event.listen(engine, "checkin", checked_in)
