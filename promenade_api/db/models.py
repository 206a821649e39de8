"""Promenade's mapped tables: the decommission runs (migration 0002_decommission_runs)."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import JSON, Float, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from common.clients.generated.promenade import DecommissionPhase
from common.jsontypes import JSONObject

RunState = Literal["running", "succeeded", "failed"]


class Base(DeclarativeBase):
    pass


class DecommissionRun(Base):
    """One decommission: the request that made it (`fingerprint`, `params`), its phases
    (`phases`: name, state, attempts, started_at, ended_at, outcome, messages each), its
    answer once over (`status_code`, `result`), and the process running it (the lease).
    `active_node` is the node while the run is not over: one active run per node."""

    __tablename__ = "decommission_runs"
    __table_args__ = (Index("ix_decommission_runs_node", "node", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    node: Mapped[str] = mapped_column(String(253))
    active_node: Mapped[str | None] = mapped_column(String(253), unique=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    params: Mapped[JSONObject] = mapped_column(JSON)
    state: Mapped[RunState] = mapped_column(String(16))
    phase: Mapped[str | None] = mapped_column(String(32))
    phases: Mapped[list[DecommissionPhase]] = mapped_column(JSON)
    status_code: Mapped[int | None] = mapped_column(Integer)
    result: Mapped[JSONObject | None] = mapped_column(JSON)
    created_by: Mapped[str] = mapped_column(String(255))
    takeovers: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires: Mapped[float | None] = mapped_column(Float)
