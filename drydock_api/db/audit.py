"""Audit entries of Drydock's tasks (stream `drydock.tasks`) and nodes (`drydock.nodes`:
retirement, teardown, power and reboot bookkeeping, reboot requests), written in the
transaction of the change they record (common.audit)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from sqlalchemy.orm import Session

from common import audit
from drydock_api.db.models import NodeRecord

TASKS, NODES = "drydock.tasks", "drydock.nodes"
SERVICE = "drydock"
# The node record's lifecycle fields (what GET /nodes/{name} reports of Drydock's own state).
NODE_FIELDS = ("retired", "retired_reason", "torn_down", "power_state", "pending_reboot_since",
               "shutdown_mode", "reboot_error", "kept_disks")
_BATCH = "berth_audit_batch"  # Session.info: the entries `batched` holds until its end


@contextlib.contextmanager
def batched(s: Session) -> Iterator[None]:
    """The entries recorded in this block of a write transaction are appended at its end, in
    order, in one go (common.audit.append_many: the heads read once, one insert), after the
    rows' own writes. An exception drops them with the transaction."""
    if isinstance(s.info.get(_BATCH), list):  # already batched by an enclosing block
        yield
        return
    pending: list[audit.Pending] = []
    s.info[_BATCH] = pending
    try:
        yield
    finally:
        s.info.pop(_BATCH, None)
    _write(s, pending)


def _write(s: Session, pending: list[audit.Pending]) -> None:
    # Drydock's write transactions hold SQLite's write lock from BEGIN (IMMEDIATE).
    audit.append_many(s.connection(), pending, write_locked=True)


def _append(s: Session, stream: str, obj: str, change: str, old: object, new: object,
            at: float, detail: Mapping[str, object] | None = None) -> None:
    entry = audit.Pending(stream, obj, change, old, new, at,
                          audit.current_actor.get() or audit.SYSTEM, detail)
    held = s.info.get(_BATCH)
    if isinstance(held, list):
        held.append(entry)
    else:
        _write(s, [entry])


def task_changed(s: Session, task_id: str, old: str | None, new: str, at: float,
                 **detail: object) -> None:
    """A task (top-level, node or step subtask) went from `old` (None: created) to `new`."""
    _append(s, TASKS, f"task/{task_id}", "created" if old is None else "state", old, new, at,
            {k: v for k, v in detail.items() if v is not None})


def task_purged(s: Session, task_id: str, status: str, at: float, **detail: object) -> None:
    """A finished top-level task was removed with its subtasks (DELETE /tasks?days=N)."""
    _append(s, TASKS, f"task/{task_id}", "purged", status, None, at, detail)


def node_state(row: NodeRecord | None) -> dict[str, object]:
    """The audited fields of a node record (a record not yet written: the defaults)."""
    if row is None:
        return {"retired": False, "torn_down": False}
    return node_fields_state({f: getattr(row, f) for f in (*NODE_FIELDS, "teardown")})


def node_fields_state(fields: Mapping[str, object]) -> dict[str, object]:
    """`node_state` of a record read as columns (NODE_FIELDS and teardown)."""
    state = {f: fields.get(f) for f in NODE_FIELDS}
    teardown = fields.get("teardown")
    teardown = teardown if isinstance(teardown, dict) else None
    state["teardown"] = None if teardown is None else {
        k: teardown.get(k) for k in ("state", "id", "task", "last_step", "cause")}
    return {k: v for k, v in state.items() if v is not None or k in ("retired", "torn_down")}


def node_changed(s: Session, name: str, before: Mapping[str, object],
                 after: Mapping[str, object],
                 at: float) -> None:
    """The node's audited fields that differ, old and new (nothing when none does)."""
    keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if keys:
        _append(s, NODES, f"node/{name}", "state", {k: before.get(k) for k in keys},
                {k: after.get(k) for k in keys}, at)


def reboot_changed(s: Session, name: str, key: str, old: object, new: object, at: float) -> None:
    """A reboot request was added (old None), changed, or released (new None)."""
    change = "requested" if old is None else ("released" if new is None else "changed")
    _append(s, NODES, f"node/{name}/reboot/{key or '-'}", change, old, new, at)
