"""Stored plans: one row per plan (its body and the facts it relied on), with an expiry."""

from __future__ import annotations

from sqlalchemy import JSON, Float, Integer, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from common.errors import NotFound
from common.jsontypes import JSONObject
from shipyard_api.db import Base
from shipyard_api.workflow.definitions import ActionParameters

KEEP = 7 * 86400


class PlanRow(Base):
    __tablename__ = "plans"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    action: Mapped[str] = mapped_column(String(64))
    parameters: Mapped[ActionParameters] = mapped_column(JSON, default=dict)
    user: Mapped[str | None] = mapped_column(String(255), nullable=True)
    marker: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
    revision_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    body: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    facts: Mapped[list[JSONObject]] = mapped_column(JSON, default=list)


class PlanStore:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def add(self, row: PlanRow, now: float) -> PlanRow:
        """Store a plan; plans expired for `KEEP` seconds are dropped on the way (an action
        created from one re-checks its facts until it ends)."""
        with self._sessions.begin() as s:
            s.execute(delete(PlanRow).where(PlanRow.expires_at < now - KEEP))
            s.add(row)
        return row

    def get(self, plan_id: str) -> PlanRow:
        with self._sessions() as s:
            row = s.get(PlanRow, plan_id)
        if row is None:
            raise NotFound(f"No plan {plan_id}", reason="PlanNotFound")
        return row

    def recent(self, limit: int = 100) -> list[PlanRow]:
        """The newest plans first (the web view's list)."""
        with self._sessions() as s:
            return list(s.scalars(select(PlanRow).order_by(PlanRow.created_at.desc())
                                  .limit(limit)).all())

    def facts(self, plan_id: str) -> list[JSONObject]:
        return list(self.get(plan_id).facts or [])
