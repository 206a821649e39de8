"""Processes on one PostgreSQL database wake each other: a NOTIFY (sent now, or with a
transaction's commit) reaches every listener of its channel; on SQLite nothing is sent or
listened to (processes there look at their poll intervals)."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from common.pgwake import Listener, notify, notify_in


def wait_for(event: threading.Event) -> bool:
    return event.wait(20)


def test_a_notify_wakes_the_listener_of_its_channel_only(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    woken = {"a": threading.Event(), "b": threading.Event()}
    ready = threading.Event()

    def on_a() -> None:
        if ready.is_set():
            woken["a"].set()
        ready.set()  # the first call: listening has started

    listener = Listener(engine, {"berth_test_a": on_a,
                                 "berth_test_b": lambda: None}).start()
    try:
        assert wait_for(ready)
        notify(create_engine(postgres_url), "berth_test_a")
        assert wait_for(woken["a"])
        assert not woken["b"].is_set()
    finally:
        listener.stop()
        engine.dispose()


def test_a_notify_in_a_transaction_is_sent_with_its_commit(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    ready, woken = threading.Event(), threading.Event()
    listener = Listener(engine, {"berth_test_c": lambda: (woken.set() if ready.is_set()
                                                          else ready.set())}).start()
    try:
        assert wait_for(ready)
        with Session(engine) as s, s.begin():
            notify_in(s, "berth_test_c", "root-1")
        assert wait_for(woken)
    finally:
        listener.stop()
        engine.dispose()


def test_on_sqlite_nothing_is_sent_or_listened_to(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    listener = Listener(engine, {"berth_test": lambda: None}).start()
    notify(engine, "berth_test")
    with Session(engine) as s, s.begin():
        notify_in(s, "berth_test")
    assert listener._thread is None
