"""common.poll: a condition checked until it holds, the deadline, what runs between checks,
all on an injected clock."""

import pytest

from common.poll import NotYet, poll


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


class TimedOut(Exception):
    pass


def _raise(seen):
    raise TimedOut(seen)


def test_returns_the_first_answer_without_sleeping():
    clock = FakeClock()
    assert poll(lambda: "done", deadline=clock() + 5, interval=1, expire=_raise,
                clock=clock, sleep=clock.sleep) == "done"
    assert clock.slept == []


def test_stops_early_when_the_condition_holds():
    clock = FakeClock()
    answers = iter([NotYet(3), NotYet(2), NotYet(1), "ok"])
    assert poll(lambda: next(answers), deadline=clock() + 60, interval=2, expire=_raise,
                clock=clock, sleep=clock.sleep) == "ok"
    assert clock.slept == [2, 2, 2]


def test_timeout_hands_the_last_seen_to_expire_and_cuts_the_last_sleep():
    clock = FakeClock()
    seen = iter(range(100))
    with pytest.raises(TimedOut) as err:
        poll(lambda: NotYet(next(seen)), deadline=clock() + 5, interval=2, expire=_raise,
             clock=clock, sleep=clock.sleep)
    assert clock.slept == [2, 2, 1]  # the last wait ends at the deadline
    assert clock.now == 105.0
    assert err.value.args == (3,)  # the check made at the deadline


def test_expire_may_answer_instead_of_raising():
    clock = FakeClock()
    assert poll(lambda: NotYet(["pod-a"]), deadline=clock() + 1, interval=5,
                expire=lambda left: left, clock=clock, sleep=clock.sleep) == ["pod-a"]


def test_whole_intervals_give_up_before_one_would_pass_the_deadline():
    clock = FakeClock()
    with pytest.raises(TimedOut):
        poll(lambda: NotYet("refused"), deadline=clock() + 5, interval=2, expire=_raise,
             clock=clock, sleep=clock.sleep, whole=True)
    assert clock.slept == [2, 2]  # at 104 a third wait would end past 105


def test_between_runs_between_two_checks_only_with_what_was_seen():
    clock = FakeClock()
    events = []
    answers = iter([NotYet("a"), NotYet("b"), "c"])

    def check():
        events.append(("check", clock()))
        return next(answers)

    assert poll(check, deadline=clock() + 10, interval=1, expire=_raise,
                between=lambda seen: events.append(("between", seen)),
                clock=clock, sleep=clock.sleep) == "c"
    assert events == [("check", 100.0), ("between", "a"), ("check", 101.0),
                      ("between", "b"), ("check", 102.0)]


def test_between_may_stop_the_wait():
    clock = FakeClock()

    class Stopped(Exception):
        pass

    def stop(_seen):
        if clock() >= 103:
            raise Stopped()

    with pytest.raises(Stopped):
        poll(lambda: NotYet(), deadline=clock() + 60, interval=1, expire=_raise,
             between=stop, clock=clock, sleep=clock.sleep)
    assert clock.now == 103.0


def test_not_between_after_the_last_check_at_the_deadline():
    clock = FakeClock()
    calls = []
    with pytest.raises(TimedOut):
        poll(lambda: NotYet(), deadline=clock() + 2, interval=1, expire=_raise,
             between=calls.append, clock=clock, sleep=clock.sleep)
    assert len(calls) == 2  # at 100 and 101; at 102 the deadline has come
