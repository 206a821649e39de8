"""Boot action records in Drydock's database: a node's context (its latest deploy and the hash
of its key) and one row per boot action with its status and the node's report messages."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from common.jsontypes import JSON, JSONObject
from drydock_api.db import read_session_factory, session_factory
from drydock_api.db.models import BootActionContextRow, BootActionRow, MessageRow
from drydock_api.db.store import touch_tree

INCOMPLETE, SUCCESS, FAILURE, UNREPORTED = "incomplete", "success", "failure", "unreported"
FINAL = (SUCCESS, FAILURE)
REFUSALS_KEPT = 5


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Context:
    node: str
    task_id: str
    key_hash: str
    design_ref: JSON
    created: float
    refusals: list[JSONObject]

    def accepts(self, key: str) -> bool:
        return hmac.compare_digest(self.key_hash, key_hash(key))


def action_view(row: BootActionRow) -> JSONObject:
    """A boot action as Drydock answers it (never its key)."""
    return {"action_id": row.action_id, "action_name": row.name, "node_name": row.node,
            "task_id": row.task_id, "action_status": row.status, "signaling": row.signaling,
            "details": list(row.details or []), "created": row.created, "updated": row.updated}


class BootActionStore:
    def __init__(self, engine: Engine, *, clock: Callable[[], float] = time.time) -> None:
        self.sessions = session_factory(engine)
        self.reads = read_session_factory(engine)
        self.clock = clock

    def begin(self, node: str, task_id: str, design_ref: JSON, key: str,
              actions: Sequence[tuple[str, str, bool]]) -> None:
        """A new deploy of `node`: its context and actions (action id, name, signaling)
        replace the earlier deploy's context; earlier actions stay as a record, and their key
        no longer opens anything."""
        now, digest = self.clock(), key_hash(key)
        with self.sessions.begin() as s:
            s.execute(delete(BootActionContextRow).where(BootActionContextRow.node == node))
            s.add(BootActionContextRow(node=node, task_id=task_id, key_hash=digest,
                                       design_ref=design_ref, created=now, refusals=[]))
            s.add_all([BootActionRow(action_id=aid, node=node, name=name, task_id=task_id,
                                     key_hash=digest, signaling=signaling,
                                     status=INCOMPLETE if signaling else UNREPORTED,
                                     details=[], created=now, updated=now)
                       for aid, name, signaling in actions])

    def context(self, node: str) -> Context | None:
        with self.reads() as s:
            row = s.get(BootActionContextRow, node)
            if row is None:
                return None
            return Context(row.node, row.task_id, row.key_hash, row.design_ref, row.created,
                           list(row.refusals or []))

    def refuse(self, node: str, reason: str) -> None:
        """Keep the last refused requests on the node's context (shown on the node)."""
        with self.sessions.begin() as s:
            row = s.get(BootActionContextRow, node)
            if row is not None:
                kept: list[JSONObject] = [*(row.refusals or []),
                                          {"at": self.clock(), "reason": reason}]
                row.refusals = kept[-REFUSALS_KEPT:]

    def action(self, action_id: str) -> BootActionRow | None:
        with self.reads() as s:
            row = s.get(BootActionRow, action_id)
            if row is not None:
                s.expunge(row)
            return row

    def actions(self, *, node: str | None = None, task_id: str | None = None,
                context: Context | None = None) -> list[BootActionRow]:
        """Boot actions of a node, a task, or one deploy's context (its key)."""
        query = select(BootActionRow).order_by(BootActionRow.created, BootActionRow.name)
        if context is not None:
            query = query.where(BootActionRow.node == context.node,
                                BootActionRow.key_hash == context.key_hash)
        if node is not None:
            query = query.where(BootActionRow.node == node)
        if task_id is not None:
            query = query.where(BootActionRow.task_id == task_id)
        with self.reads() as s:
            rows = list(s.scalars(query))
            for row in rows:
                s.expunge(row)
            return rows

    def report(self, action_id: str, status: str | None, details: list[JSONObject],
               source: str) -> BootActionRow | None:
        """Add the report's messages and (when given) its final status; None when the action
        is already final (nothing changed)."""
        now = self.clock()
        with self.sessions.begin() as s:
            row = s.get(BootActionRow, action_id)
            if row is None or row.status in FINAL:
                return None
            row.details = [*(row.details or []),
                           *({**d, "ts": now, "source": source} for d in details)]
            if status is not None:
                row.status = status
            row.updated = now
            _task_messages(s, row, details, status, now)
            s.flush()
            s.expunge(row)
            return row


def _task_messages(s: Session, row: BootActionRow, details: list[JSONObject],
                   status: str | None, now: float) -> None:
    """As Airship's Drydock: a report's messages become messages of the deploy task (context
    the boot action), and its status one more; the task's tree counts the change."""
    base = {"kind": "SimpleMessage", "node": row.node, "context_type": "bootaction",
            "context": row.action_id, "bootaction": row.name}
    bodies = [{**base, "message": str(d.get("message")), "error": bool(d.get("error")),
               "extra": {k: v for k, v in d.items() if k not in ("message", "error")}}
              for d in details]
    if status is not None:
        bodies.append({**base, "message": f"Boot action {row.name} on {row.node}: {status}",
                       "error": status == FAILURE, "action_status": status})
    for body in bodies:
        s.add(MessageRow(task_id=row.task_id, node_task_id=None, root_id=row.task_id,
                         node=row.node, step=None, ts=now, error=body["error"], body=body))
    touch_tree(s, row.task_id)
