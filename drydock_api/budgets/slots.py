"""The one authority over failure-domain slots: taking, renewing and giving up a slot, each
one transaction in Drydock's database, so holders on any replica never exceed a budget.

Every taking first locks the `budgets` lock row (SELECT ... FOR UPDATE on PostgreSQL; on
SQLite the BEGIN IMMEDIATE of every Drydock transaction is that lock), then counts the live
slots of each domain and inserts its own only when every domain has room. A slot is a lease:
one its holder stops renewing is dropped once `lease_expires` has passed."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.orm import Session

from common.clients.generated.drydock import BudgetBlocker, BudgetSlot
from common.context import RequestContext
from common.errors import Conflict
from common.jsontypes import JSON
from common.status import simple_message
from drydock_api.db import read_session_factory, session_factory
from drydock_api.db.models import BudgetSlotRow, LockRow

LOCK = "budgets"


@dataclass(frozen=True)
class Claim:
    """One domain a node belongs to (`domain` as "<name>:<value>") and its budget."""

    domain: str
    budget: int


@dataclass(frozen=True)
class Holding:
    """A live slot."""

    holder: str
    domain: str
    node: str
    budget: int
    description: str | None
    taken: float
    lease_expires: float

    def as_dict(self) -> BudgetSlot:
        return {"holder": self.holder, "domain": self.domain, "node": self.node,
                "budget": self.budget, "description": self.description,
                "taken": self.taken, "lease_expires": self.lease_expires}


@dataclass(frozen=True)
class Blocker:
    """A domain with no room: its budget and who holds its slots."""

    domain: str
    budget: int
    holders: tuple[Holding, ...]

    def sentence(self) -> str:
        held = ", ".join(f"{h.holder} ({h.node}" + (f", {h.description})" if h.description
                                                     else ")") for h in self.holders)
        return (f"failure domain {self.domain} has its budget of {self.budget} out of service "
                f"taken by {held}")

    def as_dict(self) -> BudgetBlocker:
        return {"domain": self.domain, "budget": self.budget,
                "holders": [h.as_dict() for h in self.holders], "message": self.sentence()}


def _holding(row: BudgetSlotRow) -> Holding:
    return Holding(row.holder, row.domain, row.node, row.budget, row.description, row.taken,
                   row.lease_expires)


class SlotStore:
    """Slots in Drydock's database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine, *, clock: Callable[[], float] = time.time) -> None:
        self.sessions = session_factory(engine)
        self.reads = read_session_factory(engine)
        self.clock = clock

    def take(self, holder: str, node: str, claims: Sequence[Claim], lease_seconds: float,
             description: str | None = None) -> list[Blocker]:
        """Hold a slot of every domain in `claims` for `node`, all or none; [] when held
        (taking again what `holder` holds renews it), else the domains without room."""
        with self.sessions.begin() as s:
            now = self._lock(s)
            s.execute(delete(BudgetSlotRow).where(BudgetSlotRow.lease_expires < now))
            wanted = {c.domain: c for c in claims}
            rows = list(s.scalars(select(BudgetSlotRow).where(
                BudgetSlotRow.domain.in_(list(wanted)))
                .order_by(BudgetSlotRow.taken, BudgetSlotRow.holder))) if wanted else []
            blockers = []
            for claim in claims:
                others = [r for r in rows if r.domain == claim.domain and r.holder != holder]
                if len(others) >= claim.budget:
                    blockers.append(Blocker(claim.domain, claim.budget,
                                            tuple(_holding(r) for r in others)))
            if blockers:
                return blockers
            mine = {r.domain for r in rows if r.holder == holder}
            s.execute(update(BudgetSlotRow).where(BudgetSlotRow.holder == holder)
                      .values(lease_expires=now + lease_seconds))
            s.add_all([BudgetSlotRow(holder=holder, domain=c.domain, node=node,
                                     budget=c.budget, description=description, taken=now,
                                     lease_expires=now + lease_seconds)
                       for c in claims if c.domain not in mine])
            return []

    def check(self, holder: str, claims: Sequence[Claim]) -> list[Blocker]:
        """What `take` would answer now, taking nothing (live slots of other holders)."""
        wanted = [c.domain for c in claims]
        with self.reads() as s:
            rows = list(s.scalars(select(BudgetSlotRow).where(
                BudgetSlotRow.domain.in_(wanted), BudgetSlotRow.holder != holder,
                BudgetSlotRow.lease_expires >= self.clock())
                .order_by(BudgetSlotRow.taken, BudgetSlotRow.holder))) if wanted else []
        return [Blocker(c.domain, c.budget, tuple(_holding(r) for r in rows
                                                  if r.domain == c.domain))
                for c in claims if sum(r.domain == c.domain for r in rows) >= c.budget]

    def renew(self, holder: str, lease_seconds: float) -> list[Holding]:
        """Extend `holder`'s live slots; [] when it holds none (never took one, gave them up,
        or let them expire: then another holder may have them now)."""
        with self.sessions.begin() as s:
            now = self._lock(s)
            s.execute(update(BudgetSlotRow).where(BudgetSlotRow.holder == holder,
                                                  BudgetSlotRow.lease_expires >= now)
                      .values(lease_expires=now + lease_seconds))
            return [_holding(r) for r in s.scalars(select(BudgetSlotRow).where(
                BudgetSlotRow.holder == holder, BudgetSlotRow.lease_expires >= now))]

    def renew_prefix(self, prefix: str, lease_seconds: float) -> int:
        """Extend the live slots of every holder whose name starts with `prefix` (a task's
        nodes); how many slots."""
        with self.sessions.begin() as s:
            now = self._lock(s)
            res = s.execute(update(BudgetSlotRow).where(
                BudgetSlotRow.holder.startswith(prefix, autoescape=True),
                BudgetSlotRow.lease_expires >= now).values(lease_expires=now + lease_seconds))
            return int(res.rowcount)  # type: ignore[attr-defined]

    def release(self, holder: str) -> int:
        """Give up every slot of `holder`; how many there were."""
        with self.sessions.begin() as s:
            res = s.execute(delete(BudgetSlotRow).where(BudgetSlotRow.holder == holder))
            return int(res.rowcount)  # type: ignore[attr-defined]

    def held(self, holder: str | None = None) -> list[Holding]:
        """Live slots (of `holder`), oldest first."""
        query = select(BudgetSlotRow).where(BudgetSlotRow.lease_expires >= self.clock())
        if holder is not None:
            query = query.where(BudgetSlotRow.holder == holder)
        with self.reads() as s:
            return [_holding(r) for r in s.scalars(
                query.order_by(BudgetSlotRow.taken, BudgetSlotRow.holder))]

    def _lock(self, s: Session) -> float:
        """Wait for the budgets lock; the time after the wait."""
        if s.connection().dialect.name != "sqlite":
            s.execute(select(LockRow.counter).where(LockRow.name == LOCK).with_for_update())
        return self.clock()


# (node, design_ref, request context) -> the domains the node needs a slot of
ClaimsOf = Callable[[str, JSON, RequestContext | None], list[Claim]]


class BudgetExhausted(Conflict):
    reason, title = "BudgetExhausted", "A failure domain of the node has no slot free"


def exhausted(node: str, blockers: list[Blocker]) -> BudgetExhausted:
    """409 naming each full domain and who holds it (also under details.blockers)."""
    return BudgetExhausted(
        f"{node} cannot go out of service: " + "; ".join(b.sentence() for b in blockers),
        messages=[simple_message(b.sentence(), domain=b.domain, budget=b.budget,
                                 holders=[h.holder for h in b.holders]) for b in blockers],
        details={"blockers": [b.as_dict() for b in blockers]}, retry=False)
