"""Step progress on SQLite and PostgreSQL: a step's end and the node's next step's start in one
transaction, and no next step once the task is to stop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event, select

from common import audit as chain
from common.status import simple_message
from drydock_api import db
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import NextStep, ProgressStore
from drydock_api.db.states import TaskResult, TaskStatus
from drydock_api.db.store import TaskStore
from tests.unit.drydock.conftest import FakeClock
from tests.unit.drydock.test_store import clock, create, db_url  # noqa: F401


@pytest.fixture
def progress(db_url: str, clock: FakeClock) -> Iterator[ProgressStore]:  # noqa: F811
    db.upgrade(db_url)
    tasks = TaskStore(db.make_engine(db_url), clock=clock)
    yield ProgressStore(tasks)
    tasks.engine.dispose()


def started_task(progress: ProgressStore) -> tuple[TaskRow, TaskRow, TaskRow]:
    """A running destroy of n1: (the task, n1's subtask, its first step running)."""
    store = progress._tasks
    task, _ = create(store, ["n1"])
    store.claim("w1", 10, 1)
    task = store.transition(task.id, TaskStatus.RUNNING)
    node = progress.ensure_node_tasks(task, ["n1"])["n1"]
    return task, node, progress.start_step(node, "power_off")


def test_a_steps_end_starts_the_next_step_in_the_same_transaction(progress: ProgressStore):
    task, node, first = started_task(progress)
    commits: list[object] = []
    event.listen(progress._tasks.engine, "commit", commits.append)
    before = progress.tree_key(task.id)[0]
    nxt = progress.finish(first, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                          data={"power": "off"}, messages=[simple_message("n1: off")],
                          then=NextStep(node, "erase", task.id))
    assert len(commits) == 1
    assert nxt is not None and nxt.step == "erase" and nxt.status == TaskStatus.RUNNING.value
    steps = progress.steps_of(node.id)
    assert {name: (r.status, r.result) for name, r in steps.items()} == {
        "power_off": ("complete", "success"), "erase": ("running", "incomplete")}
    assert progress.tree_key(task.id)[0] > before  # long-polls of the tree see the change
    # Starting it again (a takeover) finds the same row instead of a second one.
    assert progress.start_step(node, "erase").id == nxt.id
    with progress._tasks.engine.connect() as conn:
        assert chain.verify(conn).ok
        objects = [e["object"] for e in chain.entries(conn, stream="drydock.tasks", limit=100)]
    assert objects[-2:] == [f"task/{first.id}", f"task/{nxt.id}"]  # ended, then created


def test_no_next_step_starts_once_the_task_is_to_stop(progress: ProgressStore):
    task, node, first = started_task(progress)
    progress._tasks.request_terminate(task.id, "admin")
    nxt = progress.finish(first, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                          then=NextStep(node, "erase", task.id))
    assert nxt is None
    with progress.reads() as s:
        steps = list(s.scalars(select(TaskRow.step).where(TaskRow.parent_id == node.id)))
    assert steps == ["power_off"]
