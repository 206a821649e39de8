"""The one scheduling loop (common.schedule) on its own: work starts in the order it is due,
the loop wakes when work ends, a stuck attempt goes to the plan once and its late result is
discarded, a lost hold submits nothing more, and a fake clock's sleep replaces real waits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest

from common.runner import Hold
from common.schedule import Schedule, Start, Watch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Plan:
    """Runs each key once at its due time (`work` says what a run does); over once all ran."""

    def __init__(self, dues: dict[str, float], work: Callable[[str, Watch[str]], str],
                 limit: float | None = None, marks: bool = False) -> None:
        self.dues, self.work, self.limit, self.marks = dict(dues), work, limit, marks
        self.started: list[tuple[str, float]] = []
        self.results: list[tuple[str, str]] = []
        self.stuck_calls: list[tuple[str, float, float]] = []

    def due(self, now: float, running: Collection[str]) -> list[Start[str, str]] | None:
        ready = sorted((t, k) for k, t in self.dues.items() if t <= now)
        for _, key in ready:
            del self.dues[key]
            self.started.append((key, now))
        return [Start(k, partial(self.work, k), self.limit, self.marks) for _, k in ready]

    def next_due(self) -> float | None:
        return min(self.dues.values()) if self.dues else None

    def idle(self, now: float) -> float | None:
        return self.next_due()

    def ended(self, key: str, result: str) -> None:
        self.results.append((key, result))

    def stuck(self, key: str, began: float, now: float) -> None:
        self.stuck_calls.append((key, began, now))


def run_in_thread(schedule: Schedule[str, str]) -> threading.Thread:
    thread = threading.Thread(target=schedule.run, daemon=True)
    thread.start()
    return thread


def test_work_starts_in_due_order_and_a_fake_clock_sleeps_to_each_due_time() -> None:
    clock = Clock()
    plan = Plan({"c": 1030.0, "a": 1000.0, "b": 1010.0}, lambda key, _w: key.upper())
    with ThreadPoolExecutor(2) as pool:
        Schedule(plan, pool, Hold("u"), clock=clock, sleep=clock.sleep).run()
    assert plan.started == [("a", 1000.0), ("b", 1010.0), ("c", 1030.0)]
    assert clock.slept == [10.0, 20.0]  # slept exactly to each due time, never waited
    assert sorted(plan.results) == [("a", "A"), ("b", "B"), ("c", "C")]


def test_the_loop_wakes_when_work_ends_not_at_the_next_due_time() -> None:
    go = threading.Event()
    plan = Plan({"a": 0.0, "later": time.time() + 3600}, lambda key, _w: (go.wait(10), key)[1])
    hold = Hold("u")
    schedule: Schedule[str, str] = Schedule(plan, ThreadPoolExecutor(2), hold)
    thread = run_in_thread(schedule)
    time.sleep(0.2)
    assert plan.results == []  # waiting: nothing ended, nothing else due for an hour
    go.set()
    deadline = time.monotonic() + 5
    while not plan.results and time.monotonic() < deadline:
        time.sleep(0.01)
    assert plan.results == [("a", "a")]  # heard at once, not an hour later
    hold.lose()  # ends the loop waiting an hour for "later"
    thread.join(5)
    assert not thread.is_alive()


def test_a_stuck_attempt_goes_to_the_plan_once_and_its_late_result_is_discarded() -> None:
    clock, hold, go = Clock(), Hold("u"), threading.Event()
    entered = threading.Event()

    def hang(key: str, _w: Watch[str]) -> str:
        entered.set()
        go.wait(10)
        return "late"

    plan = Plan({"a": 1000.0}, hang, limit=5.0)
    pool = ThreadPoolExecutor(1)
    schedule: Schedule[str, str] = Schedule(plan, pool, hold, clock=clock, sleep=clock.sleep)
    thread = run_in_thread(schedule)
    assert entered.wait(5)
    clock.now += 4.0  # within its limit: may still run
    hold.wake()
    time.sleep(0.2)
    assert plan.stuck_calls == [] and thread.is_alive()
    clock.now += 2.0
    hold.wake()
    thread.join(5)
    assert not thread.is_alive()  # the loop ended while the attempt still hangs
    assert plan.stuck_calls == [("a", 1000.0, 1006.0)] and schedule.abandoned
    go.set()
    pool.shutdown(wait=True)
    assert plan.results == []  # the late result was never heard


def test_work_marking_its_attempts_learns_it_was_found_stuck() -> None:
    clock, hold, go = Clock(), Hold("u"), threading.Event()
    seen: list[bool] = []

    def attempts(key: str, watch: Watch[str]) -> str:
        assert watch.begin(clock(), None)  # an attempt without a limit is never stuck
        assert watch.end()
        assert watch.begin(clock(), 2.0)
        go.wait(10)
        seen.append(watch.end())  # the late attempt: its result is to be discarded
        seen.append(watch.begin(clock(), 2.0))  # and nothing more runs
        return "late"

    plan = Plan({"a": 1000.0}, attempts, marks=True)
    pool = ThreadPoolExecutor(1)
    thread = run_in_thread(Schedule(plan, pool, hold, clock=clock, sleep=clock.sleep))
    time.sleep(0.2)
    clock.now += 3.0
    hold.wake()
    thread.join(5)
    assert plan.stuck_calls == [("a", 1000.0, 1003.0)]
    go.set()
    pool.shutdown(wait=True)
    assert seen == [False, False] and plan.results == []


def test_an_attempt_the_work_marks_is_found_stuck_though_nothing_else_happens() -> None:
    """Work that marks its own attempts (a Drydock node's steps) begins one after the loop
    last looked; it hangs, and nothing else ends or comes due: the loop still looks again
    within CHECK_EVERY and finds it stuck (real clock)."""
    go = threading.Event()

    def attempts(key: str, watch: Watch[str]) -> str:
        time.sleep(0.1)  # the loop is waiting by now
        watch.begin(time.time(), 0.2)
        go.wait(10)
        return "late"

    plan = Plan({"a": time.time()}, attempts, marks=True)
    pool = ThreadPoolExecutor(1)
    thread = run_in_thread(Schedule(plan, pool, Hold("u")))
    thread.join(5)
    assert not thread.is_alive() and [k for k, _, _ in plan.stuck_calls] == ["a"]
    go.set()
    pool.shutdown(wait=True)
    assert plan.results == []


def test_many_running_attempts_are_looked_at_for_stuck_ones_in_passes_not_at_each_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A task runs hundreds of nodes at once: each end is collected alone, and the running
    attempts are looked over once per CHECK_EVERY (here the clock stands still: once),
    not all of them again at every end, which made the loop's work grow with the square."""
    checks: list[str] = []
    check = Watch.check

    def counted(self: Watch[str], now: float) -> float | None:
        checks.append(self.key)
        return check(self, now)

    monkeypatch.setattr(Watch, "check", counted)
    n, clock = 100, Clock()
    gates = {f"n{i:03d}": threading.Event() for i in range(n)}
    plan = Plan(dict.fromkeys(gates, 1000.0), lambda key, _w: (gates[key].wait(10), key)[1],
                limit=600.0)
    pool = ThreadPoolExecutor(n)
    thread = run_in_thread(Schedule(plan, pool, Hold("u"), clock=clock, sleep=clock.sleep))
    time.sleep(0.2)
    for gate in gates.values():  # the attempts end one after another
        gate.set()
        time.sleep(0.002)
    thread.join(10)
    assert not thread.is_alive() and sorted(plan.results) == [(k, k) for k in gates]
    assert len(checks) <= n  # the one pass as the work started (before: about n * n / 2)
    pool.shutdown()


def test_a_lost_hold_submits_nothing_more_and_the_loop_ends_when_its_work_ends() -> None:
    hold, go = Hold("u"), threading.Event()
    now = time.time()
    plan = Plan({"a": now, "b": now + 0.3}, lambda key, _w: (go.wait(10), key)[1])
    pool = ThreadPoolExecutor(2)
    thread = run_in_thread(Schedule(plan, pool, hold))
    time.sleep(0.1)
    hold.lose()
    time.sleep(0.5)  # "b" is due now
    assert thread.is_alive()  # waits for the running work
    go.set()
    thread.join(5)
    assert not thread.is_alive()
    assert [k for k, _ in plan.started] == ["a"]  # "b" never started
    assert plan.results == [("a", "a")]
    pool.shutdown()


def test_the_unit_is_over_when_the_plan_says_so() -> None:
    clock = Clock()

    class Over(Plan):
        def due(self, now: float, running: Collection[str]) -> list[Start[str, str]] | None:
            return None

    plan = Over({"a": 1000.0}, lambda key, _w: key)
    with ThreadPoolExecutor(1) as pool:
        Schedule(plan, pool, Hold("u"), clock=clock, sleep=clock.sleep).run()
    assert plan.started == [] and clock.slept == []
