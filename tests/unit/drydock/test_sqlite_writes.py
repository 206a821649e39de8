"""SQLite write transactions of one Drydock process take turns on a lock of the process, in
the order they asked: a writer waiting for another is handed the file when that one commits,
instead of sleeping in SQLite's busy handler and racing every other writer for it (hundreds
of node steps writing at once could lose every race until "database is locked")."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from sqlalchemy import text

from drydock_api import db
from drydock_api.db.store import TaskStore, write_turns


def test_writers_waiting_for_the_file_write_in_the_order_they_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/drydock.db"
    db.upgrade(url)
    store = TaskStore(db.make_engine(url))
    turns = write_turns(store.engine)
    assert turns is not None
    order: list[int] = []

    def write(i: int) -> None:
        with store.sessions.begin() as s:
            s.execute(text("UPDATE locks SET counter = counter + 1"))
            order.append(i)

    writers = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    with store.sessions.begin() as s:  # holds the file while the writers line up
        s.execute(text("UPDATE locks SET counter = counter + 1"))
        for i, writer in enumerate(writers):
            writer.start()
            deadline = time.monotonic() + 10
            while turns.waiting() <= i and time.monotonic() < deadline:
                time.sleep(0.005)
        time.sleep(0.35)  # SQLite's own busy handler would have backed off to 100 ms
    for writer in writers:
        writer.join(30)
    assert order == list(range(6))
    with store.reads() as s:
        counters = set(s.execute(text("SELECT counter FROM locks")).scalars())
    assert counters == {7}  # every write committed, none lost
