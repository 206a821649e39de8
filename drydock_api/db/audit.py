"""Audit entries of Drydock's tasks (stream `drydock.tasks`) and nodes (`drydock.nodes`:
retirement, teardown, power and reboot bookkeeping, reboot requests), written in the
transaction of the change they record (common.audit)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from common import audit
from drydock_api.db.models import NodeRecord

TASKS, NODES = "drydock.tasks", "drydock.nodes"
SERVICE = "drydock"
# The node record's lifecycle fields (what GET /nodes/{name} reports of Drydock's own state).
NODE_FIELDS = ("retired", "retired_reason", "torn_down", "power_state", "pending_reboot_since",
               "shutdown_mode", "reboot_error", "kept_disks")


def task_changed(s: Session, task_id: str, old: str | None, new: str, at: float,
                 **detail: object) -> None:
    """A task (top-level, node or step subtask) went from `old` (None: created) to `new`."""
    audit.append(s, TASKS, f"task/{task_id}", "created" if old is None else "state", old, new,
                 at=at, detail={k: v for k, v in detail.items() if v is not None})


def task_purged(s: Session, task_id: str, status: str, at: float, **detail: object) -> None:
    """A finished top-level task was removed with its subtasks (DELETE /tasks?days=N)."""
    audit.append(s, TASKS, f"task/{task_id}", "purged", status, None, at=at, detail=detail)


def node_state(row: NodeRecord | None) -> dict[str, object]:
    """The audited fields of a node record (a record not yet written: the defaults)."""
    if row is None:
        return {"retired": False, "torn_down": False}
    state = {f: getattr(row, f) for f in NODE_FIELDS}
    teardown = row.teardown if isinstance(row.teardown, dict) else None
    state["teardown"] = None if teardown is None else {
        k: teardown.get(k) for k in ("state", "id", "task", "last_step", "cause")}
    return {k: v for k, v in state.items() if v is not None or k in ("retired", "torn_down")}


def node_changed(s: Session, name: str, before: Mapping[str, object],
                 after: Mapping[str, object],
                 at: float) -> None:
    """The node's audited fields that differ, old and new (nothing when none does)."""
    keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if keys:
        audit.append(s, NODES, f"node/{name}", "state", {k: before.get(k) for k in keys},
                     {k: after.get(k) for k in keys}, at=at)


def reboot_changed(s: Session, name: str, key: str, old: object, new: object, at: float) -> None:
    """A reboot request was added (old None), changed, or released (new None)."""
    change = "requested" if old is None else ("released" if new is None else "changed")
    audit.append(s, NODES, f"node/{name}/reboot/{key or '-'}", change, old, new, at=at)
