"""Idempotency-Key entries in the database (common.idempotency_store): replays across store
instances (processes, replicas), 422 for another request, 409 RequestInProgress while the
first runs, takeover of an entry left by a dead process, expiry; SQLite and PostgreSQL, on
the tables each service's migrations create."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, func, inspect, select

from common.errors import UnprocessableEntity
from common.idempotency_store import (
    KEYS,
    RequestInProgress,
    Saved,
    SqlIdempotencyStore,
    scope_of,
)
from drydock_api import db as drydock_db
from promenade_api import db as promenade_db
from shipyard_api import db as shipyard_db

UPGRADES: dict[str, Callable[[str], None]] = {
    "shipyard": shipyard_db.upgrade, "promenade": promenade_db.upgrade,
    "drydock": drydock_db.upgrade}
ANSWER = Saved("201 Created", "application/json", b'{"id": "a1"}',
               (("Location", "/api/v1.0/actions/a1"),))
SCOPE = scope_of("alice", "POST", "/api/v1.0/actions", "key-1")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """The table as Promenade's migrations create it (the other services': see below)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/keys.db"
    else:
        url = str(request.getfixturevalue("postgres_url"))
    promenade_db.upgrade(url)
    eng = promenade_db.make_engine(url)
    yield eng
    eng.dispose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def replica(engine: Engine, clock: Clock, **kw: float) -> SqlIdempotencyStore:
    """A store as one API process holds it (its own owner id)."""
    return SqlIdempotencyStore(engine, clock=clock, **{"ttl": 3600.0, "lease": 30.0, **kw})


def rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(KEYS)).scalar_one())


def test_a_replay_on_another_replica_gets_the_first_answer(engine: Engine, clock: Clock):
    one, two = replica(engine, clock), replica(engine, clock)
    assert one.begin(SCOPE, "f1") is None  # runs
    one.finish(SCOPE, ANSWER)
    assert two.begin(SCOPE, "f1") == ANSWER
    assert one.begin(SCOPE, "f1") == ANSWER
    restarted = replica(engine, clock)  # a new process on the same database
    assert restarted.begin(SCOPE, "f1") == ANSWER


def test_the_same_key_with_another_request_is_422(engine: Engine, clock: Clock):
    one, two = replica(engine, clock), replica(engine, clock)
    assert one.begin(SCOPE, "f1") is None
    with pytest.raises(UnprocessableEntity) as running:
        two.begin(SCOPE, "f2")
    one.finish(SCOPE, ANSWER)
    with pytest.raises(UnprocessableEntity) as done:
        two.begin(SCOPE, "f2")
    assert running.value.instance_reason == done.value.instance_reason == "IdempotencyKeyReused"


def test_a_replay_while_the_first_runs_is_409_request_in_progress(engine: Engine, clock: Clock):
    one, two = replica(engine, clock, lease=20.0), replica(engine, clock)
    assert one.begin(SCOPE, "f1") is None
    clock.now += 5
    with pytest.raises(RequestInProgress) as exc:
        two.begin(SCOPE, "f1")
    assert exc.value.code == 409 and exc.value.instance_reason == "RequestInProgress"
    assert exc.value.retry_after == 15 and exc.value.instance_retry
    assert exc.value.to_status()["details"]["retry_after"] == 15
    with pytest.raises(RequestInProgress):
        one.begin(SCOPE, "f1")  # the same process too


def test_an_entry_left_running_by_a_dead_process_is_run_again_after_its_lease(
        engine: Engine, clock: Clock):
    dead, alive = replica(engine, clock, lease=10.0), replica(engine, clock, lease=10.0)
    assert dead.begin(SCOPE, "f1") is None  # ... and its process is SIGKILLed: no renewals
    clock.now += 9
    with pytest.raises(RequestInProgress):
        alive.begin(SCOPE, "f1")
    clock.now += 2  # the lease ran out
    assert alive.begin(SCOPE, "f1") is None  # taken over: runs again
    with pytest.raises(RequestInProgress):
        dead.begin(SCOPE, "f1")  # now held by the new owner
    # the old owner, if it was only slow, cannot overwrite or drop the new owner's entry
    dead.finish(SCOPE, Saved("200 OK", "application/json", b"stale"))
    with pytest.raises(RequestInProgress):
        replica(engine, clock).begin(SCOPE, "f1")
    alive.finish(SCOPE, ANSWER)
    assert replica(engine, clock).begin(SCOPE, "f1") == ANSWER


def test_a_running_owner_renews_its_lease(engine: Engine):
    running = SqlIdempotencyStore(engine, lease=0.3)
    assert running.begin(SCOPE, "f1") is None
    time.sleep(1.0)  # three leases: renewed every 0.1 s meanwhile
    with pytest.raises(RequestInProgress):
        SqlIdempotencyStore(engine, lease=0.3).begin(SCOPE, "f1")
    running.finish(SCOPE, ANSWER)
    assert SqlIdempotencyStore(engine).begin(SCOPE, "f1") == ANSWER


def test_a_failed_request_is_forgotten_and_may_run_again(engine: Engine, clock: Clock):
    one, two = replica(engine, clock), replica(engine, clock)
    assert one.begin(SCOPE, "f1") is None
    one.finish(SCOPE, None)
    assert two.begin(SCOPE, "f2") is None  # not even 422: nothing was kept
    assert rows(engine) == 1


def test_entries_expire_after_the_ttl_and_are_purged(engine: Engine, clock: Clock):
    one = replica(engine, clock, ttl=100.0)
    for key in ("a", "b", "c"):
        scope = scope_of("alice", "POST", "/x", key)
        assert one.begin(scope, "f1") is None
        one.finish(scope, ANSWER)
    clock.now += 101
    other = replica(engine, clock, ttl=100.0)
    # the same key with another body is a new request now (no 422), and expired rows go
    assert other.begin(scope_of("alice", "POST", "/x", "a"), "f2") is None
    assert rows(engine) == 1


def test_concurrent_first_requests_on_two_replicas_run_once(engine: Engine, clock: Clock):
    stores = [replica(engine, clock) for _ in range(2)]
    results: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(store: SqlIdempotencyStore) -> None:
        barrier.wait()
        try:
            results.append("run" if store.begin(SCOPE, "f1") is None else "replay")
        except RequestInProgress:
            results.append("409")

    threads = [threading.Thread(target=attempt, args=(stores[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == ["409"] * 7 + ["run"]


@pytest.mark.parametrize("service", sorted(UPGRADES))
def test_each_service_migration_creates_the_table_the_store_uses(service: str, tmp_path: Path):
    url = f"sqlite:///{tmp_path}/{service}.db"
    UPGRADES[service](url)
    engine = create_engine(url)
    try:
        columns = {c["name"] for c in inspect(engine).get_columns("idempotency_keys")}
        assert columns == {c.name for c in KEYS.columns}
        store = SqlIdempotencyStore(engine)
        assert store.begin(SCOPE, "f1") is None
        store.finish(SCOPE, ANSWER)
        assert SqlIdempotencyStore(engine).begin(SCOPE, "f1") == ANSWER
    finally:
        engine.dispose()


def test_an_answer_the_database_cannot_keep_is_still_given(tmp_path: Path) -> None:
    import falcon
    import falcon.testing

    from common.context import RequestContext
    from common.idempotency import IdempotencyMiddleware

    class Authenticated:
        def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
            req.context.berth = RequestContext(user="alice", authenticated=True)
            req.context.max_body_bytes = 1024

    class Things:
        def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
            resp.status, resp.media = falcon.HTTP_201, {"made": True}

    store = SqlIdempotencyStore.in_memory()

    def broken(scope: str, saved: Saved | None) -> None:
        raise RuntimeError("database went away")

    store.finish = broken  # type: ignore[method-assign]
    app = falcon.App(middleware=[Authenticated(), IdempotencyMiddleware(store)])
    app.add_route("/things", Things())
    resp = falcon.testing.TestClient(app).simulate_post(
        "/things", json={"a": 1}, headers={"Idempotency-Key": "k"})
    assert resp.status_code == 201 and resp.json == {"made": True}
