"""Long-poll waits: answered on a change, at the timeout, at once over the cap; woken by
this process's commits and, for other processes' writes, by the periodic re-check."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from common.errors import BadRequest
from common.longpoll import ChangeWaiters, Woken, notify_on_commit, wait_params

LONG = 30.0  # a wait that only a change (never the timeout) ends in these tests


def in_thread(fn):  # type: ignore[no-untyped-def]
    result: list[Woken] = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    return thread, result


def wait_until_waiting(waiters: ChangeWaiters, count: int = 1) -> None:
    for _ in range(2000):
        if waiters.waiting >= count:
            return
        threading.Event().wait(0.005)
    raise AssertionError("the waiter never started waiting")


def test_a_condition_already_true_is_answered_at_once() -> None:
    waiters = ChangeWaiters(max_waiters=0, recheck=LONG)
    assert waiters.wait(lambda: True, LONG) is Woken.CHANGED


def test_a_notified_change_ends_the_wait() -> None:
    waiters = ChangeWaiters(max_waiters=2, recheck=LONG)
    changed = threading.Event()
    thread, result = in_thread(lambda: waiters.wait(changed.is_set, LONG))
    wait_until_waiting(waiters)
    changed.set()
    waiters.notify()
    thread.join(10)
    assert result == [Woken.CHANGED] and waiters.waiting == 0


def test_a_notify_without_a_change_keeps_waiting() -> None:
    waiters = ChangeWaiters(max_waiters=2, recheck=LONG)
    looks: list[int] = []
    done = threading.Event()

    def changed() -> bool:
        looks.append(1)
        return done.is_set()

    thread, result = in_thread(lambda: waiters.wait(changed, LONG))
    wait_until_waiting(waiters)
    waiters.notify()
    for _ in range(2000):
        if len(looks) >= 2:
            break
        threading.Event().wait(0.005)
    assert thread.is_alive() and not result
    done.set()
    waiters.notify()
    thread.join(10)
    assert result == [Woken.CHANGED] and len(looks) == 3


def test_a_change_notified_during_the_first_look_is_not_missed() -> None:
    waiters = ChangeWaiters(max_waiters=2, recheck=LONG)
    looks: list[int] = []

    def changed() -> bool:
        looks.append(1)
        if len(looks) == 1:  # the change commits while the first look reads the old state
            threading.Thread(target=waiters.notify).start()
            threading.Event().wait(0.05)
            return False
        return True

    thread, result = in_thread(lambda: waiters.wait(changed, LONG))
    thread.join(10)
    assert result == [Woken.CHANGED] and len(looks) == 2


def test_the_wait_ends_at_its_timeout_when_nothing_changes() -> None:
    waiters = ChangeWaiters(max_waiters=1, recheck=0.01)
    assert waiters.wait(lambda: False, 0.05) is Woken.TIMEOUT
    assert waiters.wait(lambda: False, 0) is Woken.TIMEOUT
    assert waiters.waiting == 0


def test_a_change_by_another_process_is_seen_at_the_recheck() -> None:
    waiters = ChangeWaiters(max_waiters=1, recheck=0.01)
    changed = threading.Event()
    thread, result = in_thread(lambda: waiters.wait(changed.is_set, LONG))
    wait_until_waiting(waiters)
    changed.set()  # nobody notifies: only the periodic look finds it
    thread.join(10)
    assert result == [Woken.CHANGED]


def test_over_the_cap_a_request_is_answered_at_once() -> None:
    waiters = ChangeWaiters(max_waiters=1, recheck=LONG)
    changed = threading.Event()
    thread, result = in_thread(lambda: waiters.wait(changed.is_set, LONG))
    wait_until_waiting(waiters)
    assert waiters.wait(changed.is_set, LONG) is Woken.BUSY
    changed.set()
    waiters.notify()
    thread.join(10)
    assert result == [Woken.CHANGED]
    assert waiters.wait(lambda: False, 0.01) is Woken.TIMEOUT  # room again


def test_a_commit_on_the_engine_wakes_waiters_and_reads_do_not(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (v INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (0)"))
    waiters = ChangeWaiters(max_waiters=1, recheck=LONG)
    notify_on_commit(engine, waiters)
    looks: list[int] = []

    def changed() -> bool:
        with engine.begin() as conn:  # a committing read: must not wake anyone
            value = conn.execute(text("SELECT v FROM t")).scalar_one()
        looks.append(value)
        return value == 1

    thread, result = in_thread(lambda: waiters.wait(changed, LONG))
    wait_until_waiting(waiters)
    with engine.connect() as conn:  # a read elsewhere wakes nobody either
        conn.execute(text("SELECT v FROM t"))
    with engine.begin() as conn:
        conn.execute(text("UPDATE t SET v = 1"))
    thread.join(10)
    assert result == [Woken.CHANGED]
    assert looks == [0, 1]  # looked once at the start, once after the commit


def test_wait_params_are_capped_and_bad_ones_listed() -> None:
    assert wait_params(None, None, 20) == (0.0, None)
    assert wait_params("300", "12.4", 20) == (20.0, "12.4")
    with pytest.raises(BadRequest) as err:
        wait_params("soon", "x' OR 1", 20)
    assert len(err.value.messages) == 2
    for bad in ("-1", "nan", "inf"):
        with pytest.raises(BadRequest):
            wait_params(bad, None, 20)
