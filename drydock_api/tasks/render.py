"""Task bodies in the Airship Drydock shape (lowercase statuses and results)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from common.clients.drydock import Task, result_status, task_status
from common.status import Message
from drydock_api.db.models import TaskRow
from drydock_api.db.states import TaskStatus


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()


def _open(messages: list[Message]) -> list[Any]:
    """Messages carry the keys their step added beside message and error (open objects)."""
    return list(messages)


def task_body(row: TaskRow, *, messages: list[Message], subtask_ids: list[str],
              successes: list[str], failures: list[str],
              skipped: list[str] | None = None) -> Task:
    return {
        "kind": "Task",  # as Airship's Task.to_dict() writes it
        "Kind": "Task",  # as Airship's task document shows it (kept for earlier clients)
        "apiVersion": "v1.0",
        "task_id": row.id,
        "action": row.action,
        "parent_task_id": row.parent_id,
        "subtask_id_list": subtask_ids,
        "status": task_status(row.status),
        "node": row.node,
        "step": row.step,
        "result": {
            "kind": "Status",
            "Kind": "Status",
            "apiVersion": "v1.0",
            "metadata": {},
            "status": result_status(row.result),
            "message": row.result_message or "",
            "reason": row.result,
            "successes": successes,
            "failures": failures,
            "skipped": skipped or [],
            "links": [],
            "details": {"errorCount": sum(1 for m in messages if m.get("error")),
                        "messageList": _open(messages)},
        },
        "design_ref": row.design_ref,
        "node_filter": row.node_filter,
        "options": row.options or {},
        "created": iso(row.created),
        "created_by": row.created_by,
        "updated": iso(row.updated),
        "completed": iso(row.completed),
        "terminated": iso(row.completed) if row.status == TaskStatus.TERMINATED else None,
        "terminated_by": row.terminated_by,
        "terminate": bool(row.terminate_requested),
        "request_context": {"context_marker": row.context_marker, "end_user": row.created_by},
        "retry": {},
    }
