"""Node records on SQLite and PostgreSQL: retirement, reboot requests, node leases, teardown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from drydock_api import db
from drydock_api.db.models import NodeRecord, RebootRow
from drydock_api.db.nodes import NodeStore
from drydock_api.db.store import TaskStore
from tests.unit.drydock.conftest import FakeClock
from tests.unit.drydock.test_store import clock, create, db_url  # noqa: F401


@pytest.fixture
def nodes(db_url: str, clock: FakeClock) -> Iterator[tuple[NodeStore, TaskStore]]:  # noqa: F811
    db.upgrade(db_url)
    tasks = TaskStore(db.make_engine(db_url), clock=clock)
    yield NodeStore(tasks.sessions, clock), tasks
    tasks.engine.dispose()


def test_retirement_round_trip(nodes):
    store, _ = nodes
    assert store.retired("n1") == (False, None)
    store.retire("n1", "end of life")
    assert store.retired("n1") == (True, "end of life")
    store.update("n1", retired=False, retired_reason=None)
    assert store.retired("n1") == (False, None)


def test_reboot_requests_replace_by_key_and_teardown_clears_them(nodes, clock):  # noqa: F811
    store, _ = nodes
    store.add_reboot("n1", "", "soft", None, "admin", "file:///d.yaml")
    store.add_reboot("n1", "a", "soft", {"uid": 1}, "admin", None)
    store.add_reboot("n1", "a", "hard", {"uid": 2}, "admin", None)
    rows = store.reboots("n1")
    assert [(r.key, r.mode, r.value) for r in rows] == [("", "soft", None),
                                                        ("a", "hard", {"uid": 2})]
    assert store.get("n1").design_ref == "file:///d.yaml"
    assert store.to_reconcile() == ["n1"]
    store.update("n1", pending_reboot_since=clock())
    assert store.clear_reboots("n1") == 2
    assert store.reboots("n1") == [] and store.get("n1").pending_reboot_since is None
    assert store.to_reconcile() == []


def test_what_a_power_off_got_is_on_the_requests_and_the_node_at_once(nodes):
    store, _ = nodes
    store.add_reboot("n1", "a", "soft", None, "admin", None)
    store.add_reboot("n1", "b", "soft", None, "admin", None)
    store.update("n1", last_power_off={"outcome": "in-progress"})
    got = {"outcome": "forced", "forced_after": 0.4}
    store.record_reboot_power("n1", ["a"], got)
    assert [(r.key, r.power) for r in store.reboots("n1")] == [("a", got), ("b", None)]
    record = store.get("n1")
    assert record is not None and record.last_power_off == got


def test_a_reboot_view_read_during_that_write_sees_all_of_it(nodes):
    """The power record's writer holds the node's row; a reader of the node and its requests
    waits for the commit and sees both written, never the node's old record beside the
    requests' new one (or the reverse)."""
    store, _ = nodes
    store.add_reboot("n1", "a", "soft", None, "admin", None)
    store.update("n1", last_power_off={"outcome": "in-progress"})
    got = {"outcome": "forced", "forced_after": 0.4}
    seen: list[tuple[object, list[object]]] = []

    def read() -> None:
        record, requests = store.reboot_state("n1")
        seen.append((record and record.last_power_off, [r.power for r in requests]))

    reader = threading.Thread(target=read)
    with store.sessions.begin() as s:
        s.get(NodeRecord, "n1", with_for_update=True).last_power_off = got
        s.flush()
        reader.start()
        time.sleep(0.3)  # the reader has begun; on the old two reads it had read both
        for row in s.scalars(select(RebootRow).where(RebootRow.node == "n1")):
            row.power = got
    reader.join(timeout=30)
    assert seen == [(got, [got])]


def test_a_pending_reboot_is_reconciled_until_powered_on_again(nodes, clock):  # noqa: F811
    store, _ = nodes
    store.update("n1", pending_reboot_since=clock())
    assert store.to_reconcile() == ["n1"]
    clock.advance(1)
    store.update("n1", last_powered_on=clock())
    assert store.to_reconcile() == []


def test_node_lease_is_exclusive_until_it_expires(nodes, clock):  # noqa: F811
    store, _ = nodes
    assert store.claim("n1", "a", 10)
    assert store.claim("n1", "a", 10)  # renewal by the holder
    assert not store.claim("n1", "b", 10)
    clock.advance(11)
    assert store.claim("n1", "b", 10)
    store.release("n1", "b")
    assert store.claim("n1", "a", 10)


def test_busy_sees_active_power_tasks_only(nodes):
    store, tasks = nodes
    create(tasks, ["n1"], action="relabel_nodes")
    assert store.busy("n1") is None
    row, _ = create(tasks, ["n2"], action="deploy_nodes")
    assert store.busy("n2") == row.id


def test_migration_keeps_existing_node_rows_unretired_and_not_torn_down(db_url):  # noqa: F811
    from sqlalchemy import text

    db.upgrade(db_url, "0001")
    engine = db.make_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO nodes (name, retired, updated) VALUES "
                          "('old', false, 1.0)"))
    db.upgrade(db_url)
    store = NodeStore(TaskStore(engine).sessions, lambda: 2.0)
    row = store.get("old")
    assert row is not None and row.torn_down is False and row.retired is False
    assert row.pending_reboot_since is None and store.reboots("old") == []
    engine.dispose()


def test_forget_ends_a_teardown_in_one_transaction_as_the_three_calls_did(nodes, clock):  # noqa: F811
    from common import audit as chain

    store, tasks = nodes
    for name in ("n1", "n2"):
        store.add_reboot(name, "", "soft", None, "admin", None)
        store.add_reboot(name, "a", "hard", {"uid": 2}, "admin", None)
        store.update(name, pending_reboot_since=clock(), shutdown_mode="graceful")
    assert store.forget("n1", ["sdb"]) == 2  # one transaction
    store.torn_down("n2", True)  # the three transactions before
    store.set_kept_disks("n2", ["sdb"])
    assert store.clear_reboots("n2") == 2
    fields = ("torn_down", "kept_disks", "pending_reboot_since", "shutdown_mode",
              "shutdown_started", "retired")
    one, three = store.get("n1"), store.get("n2")
    assert one is not None and three is not None
    assert {f: getattr(one, f) for f in fields} == {f: getattr(three, f) for f in fields} \
        == {"torn_down": True, "kept_disks": ["sdb"], "pending_reboot_since": None,
            "shutdown_mode": None, "shutdown_started": None, "retired": False}
    assert store.reboots("n1") == [] and store.reboots("n2") == []
    with tasks.engine.connect() as conn:
        assert chain.verify(conn).ok
        entries = [e for e in chain.entries(conn, stream="drydock.nodes", limit=1000)
                   if str(e["object"]).startswith("node/n1")]
    last = entries[-3:]  # the two requests released, then the node's change
    assert [(e["object"], e["change"]) for e in last] == [
        ("node/n1/reboot/-", "released"), ("node/n1/reboot/a", "released"),
        ("node/n1", "state")]
    assert last[2]["new"] == {"kept_disks": ["sdb"], "pending_reboot_since": None,
                              "shutdown_mode": None, "torn_down": True}
