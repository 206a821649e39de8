"""Failure-domain slots on SQLite and PostgreSQL: a budget is never exceeded, even by
holders racing on threads with engines of their own (as replicas do); leases free slots."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from drydock_api import db
from drydock_api.budgets.slots import Claim, SlotStore
from tests.unit.drydock.conftest import FakeClock


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/slots.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(db_url: str, clock: FakeClock) -> Iterator[SlotStore]:
    db.upgrade(db_url)
    engine = db.make_engine(db_url)
    yield SlotStore(engine, clock=clock)
    engine.dispose()


RACK = Claim("rack:rack02", 1)
ETCD = Claim("etcd:kubernetes", 1)


def test_second_holder_is_blocked_naming_domain_and_holder(store: SlotStore) -> None:
    assert store.take("a", "node04", [RACK], 30) == []
    blockers = store.take("b", "node05", [RACK], 30)
    assert [(b.domain, b.budget, [h.holder for h in b.holders]) for b in blockers] == [
        ("rack:rack02", 1, ["a"])]
    assert "rack:rack02" in blockers[0].sentence() and "a (node04)" in blockers[0].sentence()
    assert [h.holder for h in store.held()] == ["a"]


def test_all_or_none_across_domains(store: SlotStore) -> None:
    assert store.take("a", "node01", [ETCD], 30) == []
    assert [b.domain for b in store.take("b", "node02", [Claim("rack:rack01", 2), ETCD],
                                         30)] == ["etcd:kubernetes"]
    assert [h.holder for h in store.held()] == ["a"]  # b got no rack slot either


def test_taking_again_renews_and_release_frees(store: SlotStore, clock: FakeClock) -> None:
    assert store.take("a", "node04", [RACK], 30) == []
    clock.advance(20)
    assert store.take("a", "node04", [RACK], 30) == []
    clock.advance(20)
    assert store.take("b", "node05", [RACK], 30) != []  # a's renewed lease still runs
    assert store.release("a") == 1
    assert store.take("b", "node05", [RACK], 30) == []


def test_expired_lease_frees_the_slot_and_cannot_be_renewed(store: SlotStore,
                                                             clock: FakeClock) -> None:
    assert store.take("a", "node04", [RACK], 10) == []
    clock.advance(5)
    assert [h.lease_expires for h in store.renew("a", 10)] == [clock() + 10]
    clock.advance(11)
    assert store.held() == []
    assert store.renew("a", 10) == []
    assert store.take("b", "node05", [RACK], 10) == []
    assert store.renew("a", 10) == []


def test_racing_holders_never_exceed_the_budget(db_url: str) -> None:
    """Twelve threads, each with an engine of its own, take and give back slots of a domain
    of budget 2 for a while; at no time do more than two hold one (each checks, while it
    holds, that the store lists at most two)."""
    db.upgrade(db_url)
    claim = Claim("rack:rack02", 2)
    inside: list[int] = []
    worst = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def racer(i: int) -> None:
        engine = db.make_engine(db_url)
        store = SlotStore(engine)
        try:
            granted = 0
            for _ in range(6):
                if store.take(f"h{i}", f"node{i}", [claim], 30):
                    continue
                granted += 1
                with lock:
                    inside.append(i)
                    worst[0] = max(worst[0], len(inside))
                held = store.held()
                assert len(held) <= 2, held
                with lock:
                    inside.remove(i)
                store.release(f"h{i}")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert 1 <= worst[0] <= 2
