"""The common runner: claims what it has room for, a thread per unit, heartbeats that renew
and mark a lost hold, never a second run of a unit it runs, woken on demand, stopped."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from common.runner import Hold, Runner, RunnerSettings


class Leases:
    """An in-memory lease table: unit id -> (owner, expires)."""

    def __init__(self, units: Sequence[str]) -> None:
        self.due = list(units)
        self.held: dict[str, tuple[str, float]] = {}
        self.renewals: list[tuple[str, float]] = []
        self.refuse: set[str] = set()  # renewals of these fail (another process took them)

    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> list[str]:
        free = [u for u in self.due if u not in self.held or self.held[u][1] < now][:limit]
        for u in free:
            self.held[u] = (owner, now + lease_seconds)
        return free

    def renew_unit(self, unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        self.renewals.append((unit_id, time.monotonic()))
        if unit_id in self.refuse or self.held.get(unit_id, ("", 0.0))[0] != owner:
            return False
        self.held[unit_id] = (owner, now + lease_seconds)
        return True

    def drop_unit(self, unit_id: str, owner: str) -> None:
        if self.held.get(unit_id, ("", 0.0))[0] == owner:
            del self.held[unit_id]
            self.due.remove(unit_id)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(store: Leases, work: object, capacity: int = 2, lease: float = 30.0,
         clock: Clock | None = None) -> Runner[str]:
    return Runner(store, work,  # type: ignore[arg-type]
                  RunnerSettings(capacity=capacity, lease_seconds=lease, poll_interval=3600),
                  "me", key=str, clock=clock or Clock())


def test_claims_only_what_it_has_room_for_and_runs_each_unit_in_its_own_thread() -> None:
    store, gate = Leases(["a", "b", "c"]), threading.Event()
    threads: dict[str, str] = {}

    def work(unit: str, hold: Hold) -> None:
        threads[unit] = threading.current_thread().name
        assert gate.wait(10)

    runner = make(store, work)
    assert runner.poll_once() == 2
    assert sorted(runner.active()) == ["a", "b"] and runner.poll_once() == 0
    gate.set()
    runner.join(10)
    assert len(set(threads.values())) == 2
    assert "a" not in store.held and "b" not in store.held  # dropped at the end
    assert runner.poll_once() == 1 and runner.active() in (["c"], [])
    runner.join(10)


def test_a_lapsed_lease_taken_back_by_its_owner_is_not_run_a_second_time() -> None:
    clock, store, gate = Clock(), Leases(["a"]), threading.Event()
    runs: list[str] = []

    def work(unit: str, hold: Hold) -> None:
        runs.append(unit)
        assert gate.wait(10)

    runner = make(store, work, clock=clock)
    assert runner.poll_once() == 1
    clock.now += 31  # no heartbeat meanwhile: the lease lapsed
    assert runner.poll_once() == 0  # claimed back, left to the thread running it
    assert store.held["a"] == ("me", clock.now + 30)
    gate.set()
    runner.join(10)
    assert runs == ["a"]


def test_a_failed_renewal_marks_the_hold_lost_and_the_unit_stops_before_its_next_effect(
        ) -> None:
    store, effects = Leases(["a"]), []
    started, lost_seen = threading.Event(), threading.Event()

    def work(unit: str, hold: Hold) -> None:
        started.set()
        with hold.changed:
            hold.changed.wait_for(hold.lost.is_set, 10)
        if hold.lost.is_set():
            lost_seen.set()
            return
        effects.append("second effect")

    runner = make(store, work)
    runner.poll_once()
    assert started.wait(10)
    runner.heartbeat_once()
    assert not lost_seen.is_set()
    store.refuse.add("a")
    runner.heartbeat_once()
    runner.join(10)
    assert lost_seen.is_set() and effects == []
    assert store.held["a"][0] == "me"  # a lost hold is not dropped: it is not ours


def test_heartbeats_come_every_third_of_the_lease_counted_from_the_previous_start() -> None:
    store, gate = Leases(["a"]), threading.Event()
    slow = {"first": True}
    original = store.renew_unit

    def renew(unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        if slow.pop("first", False):
            time.sleep(0.35)  # a slow renewal does not push the next one later
        return original(unit_id, owner, now, lease_seconds)

    store.renew_unit = renew  # type: ignore[method-assign]
    runner = make(store, lambda unit, hold: gate.wait(10), lease=1.5)
    loop = threading.Thread(target=runner.run, daemon=True)
    loop.start()
    time.sleep(1.9)
    runner.stop()
    gate.set()
    loop.join(5)
    runner.join(5)
    starts = [t for _, t in store.renewals]
    assert len(starts) >= 3
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(g < 0.75 for g in gaps), gaps  # 0.5 s apart, not 0.5 + 0.35


def test_wake_looks_for_work_at_once_and_stop_ends_the_loop() -> None:
    store, ran = Leases([]), threading.Event()
    runner = make(store, lambda unit, hold: ran.set())
    loop = threading.Thread(target=runner.run, daemon=True)
    loop.start()
    time.sleep(0.05)
    store.due.append("a")
    runner.wake()  # the poll interval is an hour
    assert ran.wait(5)
    runner.stop()
    loop.join(5)
    assert not loop.is_alive()
