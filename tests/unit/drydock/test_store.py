"""Tasks, leases and kept designs on SQLite and PostgreSQL: admission, idempotency, claims,
takeover, retention."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import update

from common.errors import Conflict
from drydock_api import db
from drydock_api.db.designs import DesignStore
from drydock_api.db.models import TaskRow
from drydock_api.db.states import IllegalTransition, TaskResult, TaskStatus
from drydock_api.db.store import NodesBusy, TaskStore
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import FakeClock


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(db_url: str, clock: FakeClock) -> Iterator[TaskStore]:
    db.upgrade(db_url)
    store = TaskStore(db.make_engine(db_url), clock=clock)
    yield store
    store.engine.dispose()


def create(store: TaskStore, nodes: list[str], key: str | None = None,
           exclusive: bool = True, action: str = "destroy_nodes") -> Any:
    return store.create_task(action=action, design_ref="file:///d.yaml", node_filter=None,
                             options={}, node_names=nodes, created_by="admin", marker=None,
                             idempotency_key=key, exclusive=exclusive)


def test_same_idempotency_key_returns_the_same_task(store: TaskStore):
    first, created = create(store, ["n1"], key="k-1")
    again, created_again = create(store, ["n1"], key="k-1")
    assert created and not created_again and again.id == first.id
    assert len(store.list_tasks()) == 1


def test_overlapping_nodes_are_refused_while_a_task_is_active(store: TaskStore):
    first, _ = create(store, ["n1", "n2"])
    with pytest.raises(NodesBusy) as err:
        create(store, ["n2", "n3"])
    assert err.value.code == 409 and first.id in err.value.message and "n2" in err.value.message
    create(store, ["n3"])
    store.transition(first.id, TaskStatus.RUNNING)
    store.transition(first.id, TaskStatus.COMPLETE)
    create(store, ["n1", "n2"])


def test_non_exclusive_tasks_may_share_nodes(store: TaskStore):
    create(store, ["n1"])
    create(store, ["n1"], exclusive=False, action="verify_nodes")


def test_a_task_is_claimed_by_one_worker_only(store: TaskStore):
    task, _ = create(store, ["n1"])
    assert [t.id for t in store.claim("a", 10, 5)] == [task.id]
    assert store.claim("b", 10, 5) == []


def test_expired_lease_is_taken_over_and_the_old_owner_loses_it(store: TaskStore,
                                                                 clock: FakeClock):
    task, _ = create(store, ["n1"])
    store.claim("a", 10, 5)
    store.transition(task.id, TaskStatus.RUNNING)
    clock.advance(5)
    assert store.renew(task.id, "a", 10)
    clock.advance(9)
    assert store.claim("b", 10, 5) == []
    clock.advance(2)
    assert [t.id for t in store.claim("b", 10, 5)] == [task.id]
    assert not store.renew(task.id, "a", 10)
    assert store.get(task.id).lease_owner == "b"


def test_illegal_transition_is_refused_and_changes_nothing(store: TaskStore):
    task, _ = create(store, ["n1"])
    with pytest.raises(IllegalTransition):
        store.transition(task.id, TaskStatus.COMPLETE)
    assert store.get(task.id).status == "queued"


def test_terminate_of_a_queued_task_ends_it_at_once(store: TaskStore):
    task, _ = create(store, ["n1"])
    assert store.request_terminate(task.id, "admin").status == "terminated"
    with pytest.raises(Conflict):
        store.request_terminate(task.id, "admin")


def test_terminate_of_a_running_task_asks_the_worker(store: TaskStore):
    task, _ = create(store, ["n1"])
    store.claim("a", 10, 1)
    store.transition(task.id, TaskStatus.RUNNING)
    row = store.request_terminate(task.id, "admin")
    assert row.status == "terminating" and row.terminate_requested


def test_list_filters_and_pages(store: TaskStore, clock: FakeClock):
    ids = []
    for i in range(5):
        ids.append(create(store, [f"n{i}"])[0].id)
        clock.advance(10)
    store.claim("a", 10, 1)
    store.transition(ids[0], TaskStatus.RUNNING)
    assert [t.id for t in store.list_tasks(statuses=["running"])] == [ids[0]]
    first = store.list_tasks(limit=2)
    assert [t.id for t in first] == [ids[4], ids[3]]
    assert [t.id for t in store.list_tasks(limit=2, marker=first[-1].id)] == [ids[2], ids[1]]
    assert len(store.list_tasks(since=clock() - 25)) == 2
    assert store.list_tasks(actions=["verify_nodes"]) == []


def test_a_renewal_that_waits_for_the_write_lock_counts_from_when_it_has_it(
        store: TaskStore, clock: FakeClock):
    """A renewal stuck behind another writer used to write an expiry computed before the
    wait: late by the whole wait (the cause of a rival's takeover of a renewed lease)."""
    task, _ = create(store, ["n1"])
    store.claim("a", 10, 5)
    locked, done = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        with store.sessions.begin() as s:
            s.execute(update(TaskRow).where(TaskRow.id == task.id).values(updated=clock()))
            locked.set()
            time.sleep(0.3)  # another writer holds the lock this long (at least)
        done.set()

    blocker = threading.Thread(target=hold_the_row)
    blocker.start()
    assert locked.wait(10)
    renewed_at = clock()  # the fake clock stands still: only the lock wait can add to it
    assert store.renew(task.id, "a", 10)
    blocker.join(10)
    assert done.is_set()
    expires = store.get(task.id).lease_expires
    assert expires is not None and expires - renewed_at >= 10 + 0.25


def test_designs_are_kept_once_by_digest_and_go_once_no_unfinished_task_needs_them(
        store: TaskStore, clock: FakeClock) -> None:
    kept = DesignStore(store.sessions, clock, Fernet.generate_key(), retention=100)

    def admitted(name: str) -> tuple[str, str]:
        digest = kept.keep(f"file:///{name}.yaml", designs.simple_site([name]))
        row, _ = store.create_task(
            action="destroy_nodes", design_ref=f"file:///{name}.yaml", node_filter=None,
            options={}, node_names=[], created_by=None, marker=None, idempotency_key=None,
            exclusive=False, design_digest=digest)
        return digest, row.id

    (finished, task_id), (running, _) = admitted("done"), admitted("busy")
    assert kept.keep("file:///again.yaml", designs.simple_site(["busy"])) == running  # same
    assert kept.latest("file:///busy.yaml") == running and kept.latest("file:///x") is None
    store.transition(task_id, TaskStatus.RUNNING)
    store.transition(task_id, TaskStatus.COMPLETE, completed=clock(),
                     result=TaskResult.SUCCESS.value)
    clock.advance(60)
    recent = kept.keep("file:///recent.yaml", designs.simple_site(["r"]))  # no task (yet)
    assert kept.documents(finished) is not None  # within the retention
    clock.advance(60)
    latest = kept.keep("file:///latest.yaml", designs.simple_site(["l"]))  # sweeps
    assert kept.documents(finished) is None
    assert kept.documents(running) == designs.simple_site(["busy"])  # an unfinished task's
    assert kept.documents(recent) is not None and kept.documents(latest) is not None
    assert kept.keep("file:///done.yaml", designs.simple_site(["done"])) == finished
    assert kept.documents(finished) == designs.simple_site(["done"])  # kept again
