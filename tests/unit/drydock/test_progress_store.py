"""Step progress on SQLite and PostgreSQL: a step's end and the node's next step's start in one
transaction, and no next step once the task is to stop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event, select

from common import audit as chain
from common.status import simple_message
from drydock_api import db
from drydock_api.db.models import MessageRow, TaskRow
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


def test_messages_are_decoded_once_and_read_back_as_stored(progress: ProgressStore):
    """A large task's body is read again after each change: only the messages added since
    are parsed, and what is read is what a store reading afresh reads, in the same order."""
    task, node, first = started_task(progress)
    progress.finish(first, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                    messages=[simple_message("n1: off", node="n1"),
                              {"message": "n1: power", "error": False, "power": "soft"}],
                    then=NextStep(node, "erase", task.id))
    progress.add_messages(task, [simple_message("task note", error=True)])
    fresh = ProgressStore(progress._tasks)

    def views(store: ProgressStore) -> list[object]:
        tree = store.tree_messages(task.id)
        return [store.messages(task), store.messages(node), store.messages(first),
                store.messages(task, errors_only=True),
                tree.messages(task), tree.messages(node), tree.messages(first)]

    assert views(progress) == views(fresh)
    assert [m["message"] for m in progress.messages(task)] == [
        "n1: off", "n1: power", "task note"]
    assert progress.messages(task)[1]["power"] == "soft" and progress.messages(task)[0]["ts"]
    assert progress.decoded.decoded == 3
    views(progress)
    assert progress.decoded.decoded == 3  # read again: nothing parsed again
    progress.add_messages(node, [simple_message("n1: erased", node="n1")])
    assert progress.messages(task)[-1]["message"] == "n1: erased"
    assert progress.decoded.decoded == 4


def test_a_purged_trees_message_ids_never_show_in_another_tree(progress: ProgressStore):
    """SQLite may hand out a deleted message's id again: a message is kept under its tree."""
    store = progress._tasks
    old, _ = create(store, ["n1"])
    progress.add_messages(old, [simple_message("old tree")])
    assert [m["message"] for m in progress.messages(old)] == ["old tree"]
    with store.sessions.begin() as s:  # as a purge of the old tree removes its messages
        s.execute(MessageRow.__table__.delete())
    new, _ = create(store, ["n2"])
    progress.add_messages(new, [simple_message("new tree")])
    assert [m["message"] for m in progress.messages(new)] == ["new tree"]
    assert [m["message"] for m in progress.tree_messages(new.id).messages(new)] == ["new tree"]
