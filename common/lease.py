"""Leases on database rows: the one shape in which Shipyard's and Drydock's stores hand a row
(an action, a task, a node, the documents lock) to one process at a time. A row is held by
`lease_owner` until `lease_expires` (epoch seconds); taking, renewing and dropping are
conditional UPDATEs, so of two processes racing for a row exactly one succeeds.

Taking and renewing first wait for the row's write lock (SQLite's BEGIN IMMEDIATE, the row
lock on PostgreSQL), and the new expiry counts that wait: a renewal stuck behind other
writers must not write a lease already shorter than `seconds` (or already expired)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, or_, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session


@dataclass(frozen=True)
class Lease:
    """The lease columns of one mapped table."""

    owner: InstrumentedAttribute[str | None]
    expires: InstrumentedAttribute[float | None]

    def free(self, now: float, *, holder: str | None = None) -> ColumnElement[bool]:
        """The row's lease is free or expired (or already `holder`'s)."""
        clauses = [self.owner.is_(None), self.expires < now]
        if holder is not None:
            clauses.append(self.owner == holder)
        return or_(*clauses)

    def take(self, session: Session, where: list[ColumnElement[bool]], owner: str,
             now: float, seconds: float) -> bool:
        """Hold the row `where` selects (its conditions include whether it is free) until
        `seconds` after `now` (plus the wait for the row's lock)."""
        now += self._lock(session, where)
        return self._update(session, where, lease_owner=owner, lease_expires=now + seconds)

    def renew(self, session: Session, where: list[ColumnElement[bool]], owner: str,
              now: float, seconds: float) -> bool:
        """Extend `owner`'s lease to `seconds` after `now` (plus the wait for the row's
        lock); False when another process holds the row now."""
        now += self._lock(session, where)
        return self._update(session, [*where, self.owner == owner],
                            lease_expires=now + seconds)

    def drop(self, session: Session, where: list[ColumnElement[bool]], owner: str,
             **values: Any) -> None:
        """Give the row up (when `owner` still holds it), setting `values` too."""
        self._update(session, [*where, self.owner == owner], lease_owner=None,
                     lease_expires=None, **values)

    def _lock(self, session: Session, where: list[ColumnElement[bool]]) -> float:
        """Wait for the write lock of the rows `where` selects; how long that took (s). On
        SQLite beginning the transaction is the wait (Drydock begins IMMEDIATE; a SELECT before
        the UPDATE of a deferred transaction could fail at once with SQLITE_BUSY in WAL
        mode); elsewhere SELECT ... FOR UPDATE waits for the row's lock."""
        started = time.monotonic()
        if session.connection().dialect.name != "sqlite":
            session.execute(select(self.owner).where(*where).with_for_update())
        return time.monotonic() - started

    def _update(self, session: Session, where: list[ColumnElement[bool]],
                **values: Any) -> bool:
        res = session.execute(update(self.owner.class_).where(*where).values(**values))
        return bool(res.rowcount == 1)  # type: ignore[attr-defined]
