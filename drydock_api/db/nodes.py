"""Drydock's node records: retirement, teardown, reboot requests, power bookkeeping, leases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from sqlalchemy import Table, bindparam, delete, insert, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from common.clients.generated.drydock import Teardown
from common.jsontypes import JSON, JSONObject, as_float, as_object, as_str, member
from common.lease import Lease
from drydock_api.db import audit
from drydock_api.db.models import NodeRecord, RebootRow, TaskRow
from drydock_api.db.states import ACTIVE

LEASE = Lease(NodeRecord.lease_owner, NodeRecord.lease_expires)
POWER_TASKS = ("deploy_nodes", "destroy_nodes", "prepare_nodes")
TEARDOWN_STATES: dict[str, Literal["in_progress", "partial", "complete"]] = {
    "in_progress": "in_progress", "partial": "partial", "complete": "complete"}


def teardown_view(record: JSON) -> Teardown | None:
    """What GET /nodes/{name} shows of the node's teardown (tasks.teardown): its state
    (in_progress, partial, complete), the task, the last step done and why it stopped, the
    steps done and the disks attested erased."""
    if not isinstance(record, dict) or not record:
        return None
    steps = as_object(record.get("steps"))
    view: Teardown = {
        "last_step": as_str(record.get("last_step")), "cause": as_str(record.get("cause")),
        "steps_done": sorted(steps, key=lambda s: as_float(member(steps[s], "at") or 0, 0.0)),
        "erased": {d: {k: member(e, k) for k in ("method", "drive", "task", "at")}
                   for d, e in as_object(record.get("erased")).items()}}
    state, tid, task = record.get("state"), record.get("id"), record.get("task")
    if isinstance(state, str) and state in TEARDOWN_STATES:
        view["state"] = TEARDOWN_STATES[state]
    if isinstance(tid, str):
        view["id"] = tid
    if isinstance(task, str):
        view["task"] = task
    return view


_NODES: Table = NodeRecord.__table__  # type: ignore[assignment]
_REBOOTS: Table = RebootRow.__table__  # type: ignore[assignment]
_NODE_STATE = select(*(_NODES.c[f] for f in (*audit.NODE_FIELDS, "teardown"))).where(
    _NODES.c.name == bindparam("name")).with_for_update()
_ADD_NODE = insert(_NODES)
_FORGET = update(_NODES).where(_NODES.c.name == bindparam("node")).values(
    torn_down=True, kept_disks=bindparam("kept"), pending_reboot_since=None,
    shutdown_mode=None, shutdown_started=None, updated=bindparam("now"))
_REBOOTS_OF = select(_REBOOTS.c.key, _REBOOTS.c.mode, _REBOOTS.c.value).where(
    _REBOOTS.c.node == bindparam("name")).with_for_update()
_DROP_REBOOTS = delete(_REBOOTS).where(_REBOOTS.c.node == bindparam("name"))


class NodeStore:
    """Every write is one transaction; node rows are created on first use."""

    def __init__(self, sessions: sessionmaker[Session], clock: Callable[[], float]) -> None:
        self.sessions = sessions
        self.clock = clock

    def _row(self, s: Session, name: str, *, lock: bool = False) -> NodeRecord:
        row = s.get(NodeRecord, name, with_for_update=lock)
        if row is None:
            row = NodeRecord(name=name, retired=False, torn_down=False, updated=self.clock())
            s.add(row)
            s.flush()
        return row

    def get(self, name: str) -> NodeRecord | None:
        with self.sessions() as s:
            return s.get(NodeRecord, name)

    def update(self, name: str, **values: object) -> NodeRecord:
        with self.sessions.begin() as s:
            row = self._row(s, name, lock=True)
            before = audit.node_state(row)
            for key, value in values.items():
                setattr(row, key, value)
            row.updated = self.clock()
            audit.node_changed(s, name, before, audit.node_state(row), row.updated)
            return row

    # --- retirement and teardown (the NodeRecords port of steps) ---------------------------
    def retire(self, name: str, reason: str | None) -> None:
        self.update(name, retired=True, retired_reason=reason)

    def retired(self, name: str) -> tuple[bool, str | None]:
        row = self.get(name)
        return (bool(row and row.retired), row.retired_reason if row else None)

    def torn_down(self, name: str, value: bool) -> None:
        self.update(name, torn_down=value)

    def kept_disks(self, name: str) -> list[str]:
        """Disks a preserving teardown kept: the next prepare leaves them as they are."""
        row = self.get(name)
        return [str(d) for d in (row.kept_disks or [])] if row else []

    def set_kept_disks(self, name: str, disks: list[str]) -> None:
        self.update(name, kept_disks=list(disks) or None)

    def end_teardown(self, name: str) -> None:
        """The node is deployed again: its teardown (tasks.teardown) is over."""
        row = self.get(name)
        if row is not None and row.teardown is not None:
            self.update(name, teardown=None)

    # --- reboot requests -------------------------------------------------------------------
    def add_reboot(self, name: str, key: str, mode: str, value: JSON, user: str | None,
                   design_ref: JSON) -> RebootRow:
        """Add or replace the request with this key (re-posting a key updates it)."""
        with self.sessions.begin() as s:
            node = self._row(s, name, lock=True)
            if design_ref is not None:
                node.design_ref = design_ref
            row = s.get(RebootRow, (name, key))
            old = None if row is None else {"mode": row.mode, "value": row.value}
            if row is None:
                row = RebootRow(node=name, key=key, mode=mode, value=value,
                                created=self.clock(), created_by=user)
                s.add(row)
            else:
                row.mode, row.value = mode, value
            if old != {"mode": mode, "value": value}:
                audit.reboot_changed(s, name, key, old, {"mode": mode, "value": value},
                                     self.clock())
            return row

    def reboots(self, name: str) -> list[RebootRow]:
        with self.sessions() as s:
            return self._reboots(s, name)

    def reboot_state(self, name: str) -> tuple[NodeRecord | None, list[RebootRow]]:
        """The node and its reboot requests as of one commit: the node's row is read with a
        share lock, so a write of both (record_reboot_power) is seen whole or not at all."""
        with self.sessions() as s:
            return s.get(NodeRecord, name, with_for_update={"read": True}), self._reboots(s, name)

    @staticmethod
    def _reboots(s: Session, name: str) -> list[RebootRow]:
        return list(s.scalars(select(RebootRow).where(RebootRow.node == name)
                              .order_by(RebootRow.created, RebootRow.key)))

    def delete_reboot(self, name: str, key: str) -> bool:
        with self.sessions.begin() as s:
            row = s.get(RebootRow, (name, key), with_for_update=True)
            if row is None:
                return False
            audit.reboot_changed(s, name, key, {"mode": row.mode, "value": row.value}, None,
                                 self.clock())
            res = s.execute(delete(RebootRow).where(RebootRow.node == name,
                                                    RebootRow.key == key))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    def clear_reboots(self, name: str) -> int:
        """Teardown: every request goes, and the pending reboot with them."""
        with self.sessions.begin() as s, audit.batched(s):
            now = self.clock()
            row = s.get(NodeRecord, name, with_for_update=True)
            before = audit.node_state(row)
            gone, cleared = self._drop_reboots(s, name)
            if row is not None:
                row.pending_reboot_since = row.shutdown_mode = row.shutdown_started = None
                row.updated = now
                s.flush()
            for key, old in gone:  # the audit's head lock last, after the rows' own
                audit.reboot_changed(s, name, key, old, None, now)
            if row is not None:
                audit.node_changed(s, name, before, audit.node_state(row), now)
            return cleared

    def forget(self, name: str, kept: list[str]) -> int:
        """Teardown's end in one transaction: the node torn down, the disks a preserving
        teardown kept, and every reboot request dropped with the pending reboot (what
        `torn_down`, `set_kept_disks` and `clear_reboots` do one after the other); the
        requests cleared. Its audit entries: the requests released, then the node's change.
        Core statements reading only the audited columns (a step of every destroyed node)."""
        with self.sessions.begin() as s, audit.batched(s):
            now, conn = self.clock(), s.connection()
            row = conn.execute(_NODE_STATE, {"name": name}).first()
            gone, cleared = self._drop_reboots(s, name)
            after = {"torn_down": True, "kept_disks": list(kept) or None,
                     "pending_reboot_since": None, "shutdown_mode": None}
            if row is None:
                before: dict[str, object] = {"retired": False, "torn_down": False}
                conn.execute(_ADD_NODE, {"name": name, "retired": False, "updated": now,
                                         **after})
            else:
                before = dict(row._mapping)
                conn.execute(_FORGET, {"node": name, "kept": after["kept_disks"], "now": now})
            for key, old in gone:
                audit.reboot_changed(s, name, key, old, None, now)
            audit.node_changed(s, name, audit.node_fields_state(before),
                               audit.node_fields_state({**before, **after}), now)
            return cleared

    @staticmethod
    def _drop_reboots(s: Session, name: str) -> tuple[list[tuple[str, dict[str, object]]], int]:
        """Delete the node's reboot requests (locked first): what each was, and how many.
        The node's row is locked first by every writer of its requests, so none appears
        between the read and the delete."""
        conn = s.connection()
        gone: list[tuple[str, dict[str, object]]] = [
            (str(key), {"mode": mode, "value": value})
            for key, mode, value in conn.execute(_REBOOTS_OF, {"name": name})]
        if not gone:
            return gone, 0
        res = conn.execute(_DROP_REBOOTS, {"name": name})
        return gone, int(res.rowcount)

    # --- the reconciler's view --------------------------------------------------------------
    def to_reconcile(self) -> list[str]:
        """Nodes with reboot requests, or a reboot still pending (power back on to do)."""
        with self.sessions() as s:
            with_requests = set(s.scalars(select(RebootRow.node).distinct()))
            pending = set(s.scalars(select(NodeRecord.name).where(
                NodeRecord.pending_reboot_since.is_not(None),
                or_(NodeRecord.last_powered_on.is_(None),
                    NodeRecord.last_powered_on < NodeRecord.pending_reboot_since))))
        return sorted(with_requests | pending)

    def claim(self, name: str, owner: str, seconds: float) -> bool:
        """Take the node's lease (free, expired, or already ours) with one conditional UPDATE."""
        now = self.clock()
        with self.sessions.begin() as s:
            self._row(s, name)
        with self.sessions.begin() as s:
            return LEASE.take(s, [NodeRecord.name == name, LEASE.free(now, holder=owner)],
                              owner, now, seconds)

    def release(self, name: str, owner: str) -> None:
        with self.sessions.begin() as s:
            LEASE.drop(s, [NodeRecord.name == name], owner)

    def busy(self, name: str) -> str | None:
        """The id of an active deploy/prepare/destroy task holding the node, if any."""
        with self.sessions() as s:
            rows = s.execute(select(TaskRow.id, TaskRow.node_names).where(
                TaskRow.parent_id.is_(None), TaskRow.action.in_(POWER_TASKS),
                TaskRow.status.in_([st.value for st in ACTIVE]))).all()
        return next((str(tid) for tid, names in rows if name in (names or [])), None)

    # --- power policy of reboot requests (nodes.power) ---------------------------------------
    def set_reboot_policy(self, name: str, key: str, policy: str | None,
                          grace: float | None) -> None:
        """The request's power policy and grace period; a (re-)posted request has got nothing
        yet, so what an earlier request of this key got is cleared."""
        with self.sessions.begin() as s:
            row = s.get(RebootRow, (name, key), with_for_update=True)
            if row is not None:
                row.power_policy, row.grace_period, row.power = policy, grace, None

    def record_reboot_power(self, name: str, keys: list[str], got: JSONObject) -> None:
        """What the power-off of these requests got (graceful, forced, hard, not-off), on
        the requests and the node's `last_power_off` in one transaction (a reader never sees
        one without the other)."""
        with self.sessions.begin() as s:
            self._row(s, name, lock=True).last_power_off = got
            for row in s.scalars(select(RebootRow).where(RebootRow.node == name,
                                                         RebootRow.key.in_(keys))):
                row.power = got
