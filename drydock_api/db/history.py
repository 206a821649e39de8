"""Finished task history: the build data its steps recorded, and purging old trees."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, or_, select

from common.jsontypes import JSONObject
from drydock_api.db import audit
from drydock_api.db.models import MessageRow, TaskRow
from drydock_api.db.states import FINAL, TaskStatus
from drydock_api.db.store import TaskStore


@dataclass(frozen=True)
class StepRecord:
    """What one finished step of a node recorded (its output), with its task tree's action."""

    node: str
    task_id: str
    parent_id: str | None  # the node subtask the step belongs to
    root_id: str
    action: str
    step: str
    completed: float
    output: JSONObject


@dataclass(frozen=True)
class Purged:
    tasks: list[str]  # the top-level tasks removed
    rows: int  # task rows removed (top-level, node and step subtasks)
    messages: int


class TaskHistory:
    def __init__(self, tasks: TaskStore) -> None:
        self._tasks = tasks

    def step_records(self, *, node: str | None = None,
                     task_id: str | None = None) -> list[StepRecord]:
        """Finished steps with an output, oldest first: of `node`, or of the task `task_id`
        and every task below it (404 when there is no such task)."""
        query = select(TaskRow).where(TaskRow.step.is_not(None),
                                      TaskRow.status == TaskStatus.COMPLETE.value)
        if node is not None:
            query = query.where(TaskRow.node == node)
        if task_id is not None:
            root = self._tasks.get(task_id).root_id
            query = query.where(TaskRow.root_id == root, or_(
                TaskRow.root_id == task_id, TaskRow.parent_id == task_id,
                TaskRow.id == task_id))
        with self._tasks.reads() as s:
            rows = list(s.scalars(query.order_by(TaskRow.completed, TaskRow.id)))
            roots = {r.root_id for r in rows}
            actions = {str(tid): str(action) for tid, action in s.execute(
                select(TaskRow.id, TaskRow.action).where(TaskRow.id.in_(roots)))}
        return [StepRecord(str(r.node), r.id, r.parent_id, r.root_id,
                           actions.get(r.root_id, r.action), str(r.step),
                           float(r.completed or r.updated), dict(r.data))
                for r in rows if isinstance(r.data, dict) and r.data]

    def purge(self, older_than: float) -> Purged:
        """Remove top-level tasks that finished (complete or terminated) before `older_than`
        (epoch seconds), with their subtasks and messages; an active task is never removed,
        however old."""
        finished_at = func.coalesce(TaskRow.completed, TaskRow.updated)
        with self._tasks.sessions.begin() as s:
            found = list(s.execute(select(TaskRow.id, TaskRow.status, TaskRow.action).where(
                TaskRow.parent_id.is_(None),
                TaskRow.status.in_([st.value for st in FINAL]),
                finished_at < older_than)))
            if not found:
                return Purged([], 0, 0)
            roots = [str(r[0]) for r in found]
            messages = s.execute(delete(MessageRow).where(MessageRow.root_id.in_(roots)))
            rows = s.execute(delete(TaskRow).where(TaskRow.root_id.in_(roots)))
            now = self._tasks.clock()
            for tid, status, action in sorted(found):  # the audit's head lock last
                audit.task_purged(s, str(tid), str(status), now, action=action,
                                  older_than=older_than)
        return Purged(sorted(roots), int(getattr(rows, "rowcount", 0) or 0),
                      int(getattr(messages, "rowcount", 0) or 0))
