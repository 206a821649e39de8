"""The one claim / lease / heartbeat loop of the services' durable work (Shipyard's actions,
Drydock's tasks): claim what there is room for, run each unit in its own thread, renew the
leases held, tell a unit's code when its lease was lost, never run a unit twice at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from common.failurelog import FailureLog

LOG = logging.getLogger(__name__)

U = TypeVar("U")  # what a claim hands over: an id, or a row
U_co = TypeVar("U_co", covariant=True)


class LeaseStore(Protocol[U_co]):
    """The leases of one table of units (see common.lease)."""

    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> Sequence[U_co]:
        """Take up to `limit` due units whose lease is free or expired (or already ours)."""

    def renew_unit(self, unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        """Extend `owner`'s lease; False when another process holds the unit now."""

    def drop_unit(self, unit_id: str, owner: str) -> None:
        """Give the unit's lease up (when `owner` still holds it), changing nothing else."""


def heartbeat(renew: Callable[[], None], lease_seconds: float,
              stop: threading.Event) -> None:
    """Call `renew` every `lease_seconds / 3`, counted from the previous renewal's start (a
    slow renewal does not push the next one later), until `stop` is set."""
    interval = max(lease_seconds / 3, 0.01)
    due = time.monotonic()
    while True:
        due = max(due + interval, time.monotonic())
        if stop.wait(due - time.monotonic()):
            return
        renew()


def renew_hold(store: LeaseStore[object], hold: Hold, owner: str, now: float,
               lease_seconds: float, what: str, failures: FailureLog) -> bool:
    """Renew `owner`'s lease on the hold's unit; a refusal (another process took the unit)
    marks the hold lost. False when it was lost; a failing store (the database away) is
    logged to `failures` and left to the next renewal."""
    try:
        renewed = store.renew_unit(hold.unit_id, owner, now, lease_seconds)
    except Exception as exc:
        failures.failed(exc)
        return True
    failures.ok()
    if renewed:
        return True
    LOG.warning("Lost the lease on %s %s", what, hold.unit_id)
    hold.lose()
    return False


@dataclass
class Hold:
    """A runner's hold on one unit. `lost` is set when a renewal fails (another process has
    the unit): the unit's code checks it before each effect and stops. `changed` is notified
    on that and whenever the unit's code calls `wake` (e.g. one of its attempts ended)."""

    unit_id: str
    lost: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def lose(self) -> None:
        self.lost.set()
        self.wake()

    def wake(self) -> None:
        with self.changed:
            self.changed.notify_all()


@dataclass(frozen=True)
class RunnerSettings:
    capacity: int = 8  # units run at once
    lease_seconds: float = 30.0
    poll_interval: float = 1.0  # look for due units at least this often (s)


class Runner(Generic[U]):
    """`poll_once` and `heartbeat_once` are the whole behaviour; `run` loops them.

    `work(unit, hold)` runs one claimed unit to its end or until it gives the unit up; when it
    returns with the hold not lost the runner drops the lease. `key` names a unit (its id).
    `renewed` is told the ids still held after each heartbeat (e.g. to renew what the units
    hold elsewhere)."""

    def __init__(self, store: LeaseStore[U], work: Callable[[U, Hold], None],
                 settings: RunnerSettings, owner: str, *, key: Callable[[U], str],
                 clock: Callable[[], float] = time.time,
                 renewed: Callable[[list[str]], None] | None = None,
                 name: str = "unit") -> None:
        self.store = store
        self.settings = settings
        self.owner = owner
        self._work, self._key, self._clock = work, key, clock
        self._renewed = renewed
        self._name = name
        self._holds: dict[str, Hold] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.stopping = threading.Event()
        self._poll_failures = FailureLog(LOG, f"Polling for {name}s")
        self._renew_failures = FailureLog(LOG, f"Renewing the leases of {name}s")
        self._after_renew_failures = FailureLog(LOG, f"Renewing what the {name}s hold")

    def wake(self) -> None:
        """Look for due units now (one was created in this process, or a unit ended)."""
        self._wake.set()

    def active(self) -> list[str]:
        with self._lock:
            return list(self._holds)

    def hold(self, unit_id: str) -> Hold | None:
        with self._lock:
            return self._holds.get(unit_id)

    def poll_once(self) -> int:
        """Claim what there is room for and start each new unit in its own thread; how many
        started. A unit of ours whose lease lapsed (a late heartbeat) and that this claim took
        back runs already: it is left to the thread running it."""
        free = self.settings.capacity - len(self.active())
        if free <= 0 or self.stopping.is_set():
            return 0
        claimed = self.store.claim_units(self.owner, self._clock(),
                                         self.settings.lease_seconds, free)
        with self._lock:
            new = [u for u in claimed if self._key(u) not in self._holds]
        for unit in new:
            self.start(unit)
        return len(new)

    def start(self, unit: U) -> threading.Thread:
        unit_id = self._key(unit)
        hold = Hold(unit_id)
        thread = threading.Thread(target=self._run_unit, args=(unit, hold),
                                  name=f"{self._name}-{unit_id[:8]}", daemon=True)
        with self._lock:
            self._holds[unit_id] = hold
            self._threads[unit_id] = thread
        thread.start()
        return thread

    def _run_unit(self, unit: U, hold: Hold) -> None:
        try:
            self._work(unit, hold)
            if not hold.lost.is_set():
                self.store.drop_unit(hold.unit_id, self.owner)
        except Exception:
            LOG.exception("%s %s failed in %s; its lease will expire", self._name,
                          hold.unit_id, self.owner)
        finally:
            with self._lock:
                self._holds.pop(hold.unit_id, None)
                self._threads.pop(hold.unit_id, None)
            self.wake()  # room for another unit

    def heartbeat_once(self) -> None:
        """Renew every lease held; a unit another process took is marked lost."""
        with self._lock:
            holds = list(self._holds.values())
        for hold in holds:
            renew_hold(self.store, hold, self.owner, self._clock(), self.settings.lease_seconds,
                       self._name, self._renew_failures)
        if self._renewed is not None:
            try:
                self._renewed([h.unit_id for h in holds if not h.lost.is_set()])
            except Exception as exc:
                self._after_renew_failures.failed(exc)
            else:
                self._after_renew_failures.ok()

    def run(self) -> None:
        """Poll for work and renew leases until `stopping` is set."""
        beat = threading.Thread(target=self._heartbeat_loop, name=f"{self._name}-heartbeat",
                                daemon=True)
        beat.start()
        while not self.stopping.is_set():
            self._wake.clear()
            try:
                claimed = self.poll_once()
            except Exception as exc:
                self._poll_failures.failed(exc)
                claimed = 0
            else:
                self._poll_failures.ok()
            if not claimed:
                self._wake.wait(self.settings.poll_interval)

    def _heartbeat_loop(self) -> None:
        heartbeat(self.heartbeat_once, self.settings.lease_seconds, self.stopping)

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the units running now to end."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout)
