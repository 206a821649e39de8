"""Per-node progress of a task: node subtasks, step subtasks (the record of completed steps),
messages, and node retirement."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import (
    Connection,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from common.errors import NotFound
from common.jsontypes import JSON, JSONObject
from common.prepared import PreparedRead
from common.status import Message
from drydock_api.db import audit
from drydock_api.db.messages import DecodedMessages
from drydock_api.db.models import MessageRow, NodeRecord, TaskRow
from drydock_api.db.states import TaskResult, TaskStatus
from drydock_api.db.store import TaskStore, touch_root, touch_tree


def _tree_key_query() -> Select[tuple[int, int | None]]:
    """(changes of the tree, last message id) of the tree holding the task `:task_id`, no row
    when there is no such task; asked on every tree request (see PreparedRead)."""
    root_id = select(TaskRow.root_id).where(TaskRow.id == bindparam("task_id")) \
        .scalar_subquery()
    last_message = select(func.max(MessageRow.id)).where(MessageRow.root_id == root_id) \
        .scalar_subquery()
    return select(TaskRow.changes, last_message).where(TaskRow.id == root_id)


TREE_KEY = _tree_key_query()
RETRY, STATE = "retry", "state"  # a running step's row data: its saved retry and progress
# The hot writes of a step (its start, progress and end, the node's teardown record) are
# Core statements built once and run on the transaction's connection: no ORM unit of work,
# no identity map (the stores' sessions hold none of these rows).
TASKS: Table = TaskRow.__table__  # type: ignore[assignment]
NODES: Table = NodeRecord.__table__  # type: ignore[assignment]
MESSAGES: Table = MessageRow.__table__  # type: ignore[assignment]
# a message as stored, its body as JSON text (drydock_api.db.messages decodes it once)
STORED = (MESSAGES.c.id, MESSAGES.c.root_id, cast(MESSAGES.c.body, Text), MESSAGES.c.ts)
SAVE_STEP = update(TASKS).where(TASKS.c.id == bindparam("task_id")).values(
    data=bindparam("data"))
ADD_TASK, ADD_MESSAGES, ADD_NODE = insert(TASKS), insert(MESSAGES), insert(NODES)
# A node's audited fields and teardown record, locked (PostgreSQL) for the change.
NODE_STATE = select(*(NODES.c[f] for f in (*audit.NODE_FIELDS, "teardown"))).where(
    NODES.c.name == bindparam("name")).with_for_update()
TEARDOWN_OF = select(NODES.c.teardown).where(NODES.c.name == bindparam("name"))
SET_TEARDOWN = update(NODES).where(NODES.c.name == bindparam("node")).values(
    teardown=bindparam("teardown"), updated=bindparam("now"))
STEP_ID = select(TASKS.c.id).where(TASKS.c.parent_id == bindparam("parent"),
                                   TASKS.c.step == bindparam("step")).limit(1)
# A task's end: the columns set are those of the parameters (besides task_id and was).
END, END_IF = (update(TASKS).where(*where) for where in (
    [TASKS.c.id == bindparam("task_id")],
    [TASKS.c.id == bindparam("task_id"), TASKS.c.status == bindparam("was")]))
OLD_STATUS = select(TASKS.c.status).where(TASKS.c.id == bindparam("task_id")).with_for_update()
# A change of a node's teardown record (tasks.teardown), made in a step's transaction.
TeardownUpdate = tuple[str, Callable[[JSONObject | None], JSONObject | None]]


@dataclass(frozen=True)
class NextStep:
    """The step a node starts right after its current one succeeds (ProgressStore.finish),
    unless its task (`task_id`) is to stop."""

    node_task: TaskRow
    step: str
    task_id: str


def _stopping(s: Session, task_id: str) -> bool:
    """Whether the task is asked to stop (terminate requested, or terminating)."""
    status, terminate = s.execute(select(TaskRow.status, TaskRow.terminate_requested)
                                  .where(TaskRow.id == task_id)).one()
    return bool(terminate) or status == TaskStatus.TERMINATING.value


class ProgressStore:
    """Writes the task tree as nodes and steps advance; reads it back after a takeover."""

    def __init__(self, tasks: TaskStore) -> None:
        self._tasks = tasks
        self.sessions = tasks.sessions
        self.reads = tasks.reads
        self._tree_key = PreparedRead(tasks.engine, TREE_KEY)
        self.clock = tasks.clock
        self.decoded = DecodedMessages()

    def _child(self, parent: TaskRow, *, action: str, node: str | None,
               step: str | None) -> TaskRow:
        return TaskRow(**self._child_values(parent, action=action, node=node, step=step))

    def _child_values(self, parent: TaskRow, *, action: str, node: str | None,
                      step: str | None) -> dict[str, object]:
        now = self.clock()
        return {
            "id": self._tasks.new_id(), "parent_id": parent.id, "root_id": parent.root_id,
            "action": action, "node": node, "step": step, "status": TaskStatus.RUNNING.value,
            "result": TaskResult.INCOMPLETE.value, "design_ref": parent.design_ref,
            "node_filter": {"filter_set_type": "union",
                            "filter_set": [{"filter_type": "union", "node_names": [node]}]}
            if node else None,
            "options": parent.options, "node_names": [node] if node else [], "created": now,
            "updated": now, "terminate_requested": False, "successes": [], "failures": [],
            "context_marker": parent.context_marker, "created_by": parent.created_by,
            "changes": 0}

    def ensure_node_tasks(self, root: TaskRow, nodes: Sequence[str]) -> dict[str, TaskRow]:
        """One subtask per node (created once; existing ones are returned after a takeover)."""
        with self.sessions.begin() as s, audit.batched(s):
            have = {r.node: r for r in s.scalars(select(TaskRow).where(
                TaskRow.parent_id == root.id, TaskRow.step.is_(None)))}
            new = [self._child(root, action=root.action, node=n, step=None)
                   for n in nodes if n not in have]
            s.add_all(new)
            if new:
                touch_tree(s, root.root_id)
            for r in new:  # the audit's head lock last, after the rows' own
                audit.task_changed(s, r.id, None, r.status, r.created, parent=root.id,
                                   node=r.node)
            have.update({r.node: r for r in new})
        return {str(k): v for k, v in have.items()}

    def steps_of(self, node_task_id: str) -> dict[str, TaskRow]:
        with self.reads() as s:
            return {str(r.step): r for r in s.scalars(select(TaskRow).where(
                TaskRow.parent_id == node_task_id).order_by(TaskRow.id))}

    def start_step(self, node_task: TaskRow, step: str) -> TaskRow:
        """The step subtask, reusing one left running by a dead worker."""
        with self.sessions.begin() as s, audit.batched(s):
            return self._start_step(s, s.connection(), node_task, step, touch=True)

    def _start_step(self, s: Session, conn: Connection, node_task: TaskRow, step: str, *,
                    touch: bool) -> TaskRow:
        found = conn.execute(STEP_ID, {"parent": node_task.id, "step": step}).scalar()
        if found is not None:  # left running by a dead worker: read whole (seldom)
            return s.get_one(TaskRow, found)
        values = self._child_values(node_task, action=step, node=node_task.node, step=step)
        conn.execute(ADD_TASK, values)
        row = TaskRow(**values)  # what was inserted; never attached to a session
        if touch:
            touch_root(s, conn, row.root_id)
        audit.task_changed(s, row.id, None, row.status, row.created, parent=node_task.id,
                           node=row.node, step=step)
        return row

    def save_retry(self, step: TaskRow, retry: JSONObject) -> None:
        """Keep a waiting step's retry (see tasks.engine.Attempts) in its row's data."""
        self.save_step(step, retry, {})

    def save_step(self, step: TaskRow, retry: JSONObject, state: JSONObject, *,
                  teardown: TeardownUpdate | None = None) -> None:
        """Keep a running step's retry (see tasks.engine.Attempts) and progress (what it
        asked of which BMC or MAAS machine, the job to follow: NodeContext.state) in its
        row's data, and the node's teardown change, in one transaction. Not shown in task
        bodies, so the tree is not touched; the step's output replaces them."""
        with self.sessions.begin() as s:
            conn = s.connection()
            conn.execute(SAVE_STEP, {"task_id": step.id, "data": {RETRY: retry, STATE: state}})
            if teardown is not None:
                self._update_teardown(s, conn, *teardown)

    @staticmethod
    def saved_retry(step: TaskRow) -> JSONObject | None:
        """The retry `save_step` kept for a step still running (after a takeover)."""
        return ProgressStore._saved(step, RETRY)

    @staticmethod
    def saved_state(step: TaskRow) -> JSONObject:
        """The progress `save_step` kept for a step still running (after a takeover)."""
        return dict(ProgressStore._saved(step, STATE) or {})

    @staticmethod
    def _saved(step: TaskRow, key: str) -> JSONObject | None:
        if step.status != TaskStatus.RUNNING or not isinstance(step.data, dict):
            return None
        saved = step.data.get(key)
        return saved if isinstance(saved, dict) else None

    def teardown(self, name: str) -> JSONObject | None:
        """The node's teardown record (tasks.teardown), None when it has none."""
        with self.reads() as s:
            value = s.connection().execute(TEARDOWN_OF, {"name": name}).scalar()
        return dict(value) if isinstance(value, dict) else None

    def update_teardown(self, update_: TeardownUpdate) -> None:
        with self.sessions.begin() as s:
            self._update_teardown(s, s.connection(), *update_)

    def _update_teardown(self, s: Session, conn: Connection, name: str,
                         change: Callable[[JSONObject | None], JSONObject | None]) -> None:
        """Change the node's teardown record, reading only the audited fields."""
        row = conn.execute(NODE_STATE, {"name": name}).first()
        fields = dict(row._mapping) if row is not None else None
        current = fields["teardown"] if fields and isinstance(fields["teardown"], dict) \
            else None
        new = change(dict(current) if current is not None else None)
        if new == current:
            return
        now = self.clock()
        if fields is None:
            before = audit.node_state(None)
            fields = {"retired": False, "torn_down": False}
            conn.execute(ADD_NODE, {"name": name, "retired": False, "torn_down": False,
                                    "updated": now, "teardown": new})
        else:
            before = audit.node_fields_state(fields)
            conn.execute(SET_TEARDOWN, {"node": name, "teardown": new, "now": now})
        audit.node_changed(s, name, before, audit.node_fields_state({**fields, "teardown": new}),
                           now)

    def finish(self, task: TaskRow, *, result: TaskResult, status: TaskStatus,
               data: JSON = None, messages: Sequence[Message] = (),
               teardown: TeardownUpdate | None = None,
               then: NextStep | None = None) -> TaskRow | None:
        """Record a step's or node's end (status, result, output), its messages and the
        node's teardown change at once. With `then`, the node's next step starts in the same
        transaction unless the task is to stop: its row (None when it did not start)."""
        now = self.clock()
        values: dict[str, object] = {"status": status.value, "result": result.value,
                                  "updated": now, "completed": now}
        if data is not None:
            values["data"] = data
        if task.node:
            values["successes" if result == TaskResult.SUCCESS else "failures"] = \
                [task.node] if result in (TaskResult.SUCCESS, TaskResult.FAILURE) else []
        with self.sessions.begin() as s, audit.batched(s):
            conn = s.connection()
            old = self._end_row(conn, task, values)
            # The tree's change counted; the task's stop asked in the same statement.
            stop = touch_root(s, conn, task.root_id)
            self._add_messages(conn, task, messages, now)
            if teardown is not None:
                self._update_teardown(s, conn, *teardown)
            if old != status.value:  # the audit's head locks last (nodes', then tasks')
                audit.task_changed(s, task.id, old, status.value, now, result=result.value,
                                   node=task.node, step=task.step)
            if then is None:
                return None
            if then.task_id != task.root_id:
                stop = _stopping(s, then.task_id)
            if stop:
                return None
            return self._start_step(s, conn, then.node_task, then.step, touch=False)

    @staticmethod
    def _end_row(conn: Connection, task: TaskRow, values: dict[str, object]) -> str | None:
        """Write a task's end; its status before. One statement when the row still has the
        status the caller read (the usual case: a step this worker started), else the status
        read under lock first."""
        if task.status is not None:
            ended = conn.execute(END_IF,
                                 {**values, "task_id": task.id, "was": str(task.status)})
            if ended.rowcount == 1:
                return str(task.status)
        old = conn.execute(OLD_STATUS, {"task_id": task.id}).scalar()
        conn.execute(END, {**values, "task_id": task.id})
        return None if old is None else str(old)

    def add_messages(self, task: TaskRow, messages: Sequence[Message]) -> None:
        with self.sessions.begin() as s:
            self._add_messages(s.connection(), task, messages, self.clock())

    def _add_messages(self, conn: Connection, task: TaskRow, messages: Sequence[Message],
                      now: float) -> None:
        if not messages:
            return
        node_task_id = task.parent_id if task.step else (task.id if task.node else None)
        conn.execute(ADD_MESSAGES, [
            {"task_id": task.id, "node_task_id": node_task_id, "root_id": task.root_id,
             "node": m.get("node", task.node), "step": task.step, "ts": now,
             "error": bool(m.get("error")), "body": dict(m)} for m in messages])

    def messages(self, task: TaskRow, *, errors_only: bool = False) -> list[Message]:
        """Messages of a task and everything below it, oldest first."""
        if task.parent_id is None:
            cond = MESSAGES.c.root_id == task.id
        else:
            cond = or_(MESSAGES.c.task_id == task.id, MESSAGES.c.node_task_id == task.id)
        # On the connection, the bodies as text: only messages not read before are parsed.
        query = select(*STORED).where(cond)
        if errors_only:
            query = query.where(MESSAGES.c.error.is_(True))
        with self.reads() as s:
            rows = s.connection().execute(query.order_by(MESSAGES.c.id)).all()
        return self.decoded.of(rows)

    def tree_messages(self, root_id: str) -> TreeMessages:
        """Every message of a task tree in one query, to list each level's own from."""
        query = (select(MESSAGES.c.task_id, MESSAGES.c.node_task_id, *STORED)
                 .where(MESSAGES.c.root_id == root_id).order_by(MESSAGES.c.id))
        with self.reads() as s:
            rows = s.connection().execute(query).all()
        found = self.decoded.of(row[2:] for row in rows)
        return TreeMessages(root_id, [(row[2], row[0], row[1], m)
                                      for row, m in zip(rows, found, strict=True)])

    def tree_key(self, task_id: str) -> tuple[int, int | None]:
        """What the body of a tree holding `task_id` depends on: (changes of the tree, last
        message id). Tasks and messages are never deleted, and every write to a task of the
        tree counts one change on its top-level task (`touch_tree`). 404: no such task."""
        row = self._tree_key.one(task_id=task_id)
        if row is None:
            raise NotFound(f"Task {task_id} does not exist", reason="TaskNotFound")
        return int(row[0]), row[1]

    def retire(self, name: str, reason: str | None) -> None:
        now = self.clock()
        with self.sessions.begin() as s:
            row = s.get(NodeRecord, name, with_for_update=True)
            before = audit.node_state(row)
            if row is None:
                row = NodeRecord(name=name, retired=True, retired_reason=reason, updated=now)
                s.add(row)
            else:
                row.retired, row.retired_reason, row.updated = True, reason, now
            audit.node_changed(s, name, before, audit.node_state(row), now)


class TreeMessages:
    """A tree's messages, answering `messages(task)` for any of its tasks without a query."""

    def __init__(self, root_id: str,
                 rows: list[tuple[int, str, str | None, Message]]) -> None:
        self._root_id, self._all = root_id, [m for _, _, _, m in rows]
        self._by_task: dict[str, list[tuple[int, Message]]] = {}
        for mid, tid, ntid, m in rows:
            self._by_task.setdefault(tid, []).append((mid, m))
            if ntid is not None and ntid != tid:
                self._by_task.setdefault(ntid, []).append((mid, m))

    def messages(self, task: TaskRow) -> list[Message]:
        """What ProgressStore.messages(task) answers, in the same (id) order."""
        if task.parent_id is None and task.id == self._root_id:
            return list(self._all)
        return [m for _, m in sorted(self._by_task.get(task.id, []), key=lambda p: p[0])]
