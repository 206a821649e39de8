"""GET /actions/{id}: how many SQL statements it runs (on SQLite none while nothing was committed,
its version after another commit, the view's three reads on a first read and after a change of
the action), and that a commit by another process
is seen by the next request and by a long-poll."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
from sqlalchemy import event

from common.longpoll import ChangeWaiters, notify_on_commit
from common.prepared import PreparedRead
from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.workflow.states import ActionState
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

P = "/api/v1.0/actions"
RECHECK = 0.3  # the long-polls' look at the database, for commits of other processes


class Statements:
    """Every SQL statement SQLite runs on the engine's connections (the pool's `connect`
    event sets SQLite's trace callback: it sees the raw-connection reads too, which
    SQLAlchemy's cursor events do not)."""

    def __init__(self, harness: Harness) -> None:
        self.seen: list[str] = []
        event.listen(harness.engine_db, "connect", self._trace)
        harness.engine_db.dispose()  # every connection from now on is a traced one

    def _trace(self, dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(self._seen)

    def _seen(self, sql: str) -> None:
        if not sql.lstrip().upper().startswith("PRAGMA"):  # the engine's connect pragmas
            self.seen.append(sql)

    def during(self, call: Any) -> list[str]:
        before = len(self.seen)
        call()
        return self.seen[before:]


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> Iterator[tuple[falcon.testing.TestClient,
                                                            dict[str, str], str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"},
                                            "api": {"long_poll_max_wait": 10.0,
                                                    "long_poll_recheck": RECHECK}})
    waiters = ChangeWaiters(max_waiters=2, recheck=RECHECK)
    notify_on_commit(harness.engine_db, waiters)
    app = create_app(config.load(str(tmp_path / "shipyard.conf")),
                     harness.deps(waiters=waiters))
    harness.commit(tag="site-action-success")
    action_id = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    yield falcon.testing.TestClient(app), {"X-Auth-Token": tokens["reader"]}, action_id


def test_an_unchanged_action_costs_one_read_of_its_version(api: Any,
                                                           harness: Harness) -> None:
    client, reader, action_id = api
    statements = Statements(harness)

    def get() -> falcon.testing.Result:
        resp = client.simulate_get(f"{P}/{action_id}", headers=reader)
        assert resp.status_code == 200
        return resp

    first = statements.during(get)
    assert len(first) == 3, first  # the action, its steps, its audit trail: one read each
    assert len(statements.during(get)) == 1  # its version
    for _ in range(5):  # nothing committed since: the version this thread read (data_version)
        assert statements.during(get) == []
    harness.store.transition(action_id, ActionState.RUNNING, harness.clock())
    changed: list[falcon.testing.Result] = []
    after = statements.during(lambda: changed.append(get()))
    assert len(after) == 4, after  # its version, then the view's three reads
    assert changed[0].json["state"] == "running"
    assert statements.during(get) == []


def _commit_elsewhere(db: Path, action_id: str, message: str) -> None:
    """Another process changes the action (as a shipyard-worker sharing the file would)."""
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=30); "
            "c.execute('UPDATE actions SET message = ?, version = version + 1 WHERE id = ?', "
            "(sys.argv[3], sys.argv[2])); c.commit(); c.close()")
    subprocess.run([sys.executable, "-c", code, str(db), action_id, message], check=True,
                   timeout=60)


def test_a_commit_by_another_process_is_seen_by_the_next_request(api: Any, harness: Harness,
                                                                 tmp_path: Path) -> None:
    client, reader, action_id = api
    before = client.simulate_get(f"{P}/{action_id}", headers=reader)
    client.simulate_get(f"{P}/{action_id}", headers=reader)  # kept
    _commit_elsewhere(tmp_path / "shipyard.db", action_id, "changed elsewhere")
    after = client.simulate_get(f"{P}/{action_id}", headers=reader)
    assert after.json["message"] == "changed elsewhere"
    assert int(after.headers["X-Action-Version"]) == int(before.headers["X-Action-Version"]) + 1


def test_a_long_poll_sees_a_commit_by_another_process(api: Any, harness: Harness,
                                                      tmp_path: Path) -> None:
    client, reader, action_id = api
    version = client.simulate_get(f"{P}/{action_id}", headers=reader).headers["X-Action-Version"]
    answers: list[tuple[float, falcon.testing.Result]] = []

    def poll() -> None:
        started = time.monotonic()
        resp = client.simulate_get(f"{P}/{action_id}", headers=reader,
                                   params={"wait": "10", "since": version})
        answers.append((time.monotonic() - started, resp))

    waiting = threading.Thread(target=poll)
    waiting.start()
    time.sleep(0.2)
    committed = time.monotonic()
    _commit_elsewhere(tmp_path / "shipyard.db", action_id, "changed elsewhere")
    waiting.join(15)
    (_, resp), = answers
    assert resp.headers["X-Long-Poll"] == "changed"
    assert resp.json["message"] == "changed elsewhere"
    assert time.monotonic() - committed < 5.0  # within a recheck or two, not the 10 s wait


def test_statements_per_request_on_either_database(any_harness: Harness, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLAlchemy's cursor events count the ORM's statements; the freshness reads run on a
    raw connection (common.prepared), counted where they are made."""
    harness = any_harness
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    client = falcon.testing.TestClient(create_app(config.load(str(tmp_path / "shipyard.conf")),
                                                  harness.deps()))
    harness.commit(tag="site-action-success")
    action_id = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    orm: list[str] = []
    event.listen(harness.engine_db, "before_cursor_execute",
                 lambda _c, _cur, sql, *_a: orm.append(sql))
    raw: list[object] = []
    real_one = PreparedRead.one

    def counted(self: PreparedRead, **params: object) -> tuple[Any, ...] | None:
        raw.append(params)
        return real_one(self, **params)

    monkeypatch.setattr(PreparedRead, "one", counted)

    def get() -> tuple[int, int]:
        before = len(orm), len(raw)
        resp = client.simulate_get(f"{P}/{action_id}", headers={"X-Auth-Token": tokens["reader"]})
        assert resp.status_code == 200
        return len(orm) - before[0], len(raw) - before[1]

    assert get() == (3, 0)  # the action, its steps, its audit trail
    assert get() == (0, 1)  # unchanged: its version
    harness.store.transition(action_id, ActionState.RUNNING, harness.clock())
    assert get() == (3, 1)  # changed: its version, then the view
