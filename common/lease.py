"""Leases on database rows: the one shape in which Shipyard's and Drydock's stores hand a row
(an action, a task, a node, the documents lock) to one process at a time. A row is held by
`lease_owner` until `lease_expires` (epoch seconds); taking, renewing and dropping are
conditional UPDATEs, so of two processes racing for a row exactly one succeeds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, or_, update
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
        """Hold the row `where` selects (its conditions include whether it is free)."""
        return self._update(session, where, lease_owner=owner, lease_expires=now + seconds)

    def renew(self, session: Session, where: list[ColumnElement[bool]], owner: str,
              now: float, seconds: float) -> bool:
        """Extend `owner`'s lease; False when another process holds the row now."""
        return self._update(session, [*where, self.owner == owner],
                            lease_expires=now + seconds)

    def drop(self, session: Session, where: list[ColumnElement[bool]], owner: str,
             **values: Any) -> None:
        """Give the row up (when `owner` still holds it), setting `values` too."""
        self._update(session, [*where, self.owner == owner], lease_owner=None,
                     lease_expires=None, **values)

    def _update(self, session: Session, where: list[ColumnElement[bool]],
                **values: Any) -> bool:
        res = session.execute(update(self.owner.class_).where(*where).values(**values))
        return bool(res.rowcount == 1)  # type: ignore[attr-defined]
