"""SQLAlchemy models of actions, their steps and the command audit."""

from __future__ import annotations

from typing import TypedDict

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from common.jsontypes import JSONObject
from shipyard_api.db import Base
from shipyard_api.workflow.definitions import ActionParameters

# A line of a step's log: when, what, and the try it belongs to (see outcomes.note).
StepNote = TypedDict("StepNote", {"at": float, "message": str, "try": int})


class ActionRow(Base):
    __tablename__ = "actions"
    __table_args__ = (Index("ix_actions_changes", "changes"),)

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    parameters: Mapped[ActionParameters] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(16), index=True)
    marker: Mapped[str] = mapped_column(String(64))
    user: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    next_run_at: Mapped[float] = mapped_column(Float, index=True)
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires: Mapped[float | None] = mapped_column(Float, nullable=True)
    revision_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    site_wide: Mapped[bool] = mapped_column(Boolean, default=False)
    target_nodes: Mapped[list[str]] = mapped_column(JSON, default=list)
    reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    validations: Mapped[list[JSONObject]] = mapped_column(JSON, default=list)
    # Bumped by every write of a listed field (the action list's cache keys on its sum).
    changes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Bumped by every write of the action's own view: its row, a step, an audit entry (the
    # cached body of GET /actions/{id} keys on it).
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StepRow(Base):
    __tablename__ = "action_steps"
    __table_args__ = (UniqueConstraint("action_id", "step_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action_id: Mapped[str] = mapped_column(ForeignKey("actions.id", ondelete="CASCADE"),
                                           index=True)
    step_id: Mapped[str] = mapped_column(String(300))
    name: Mapped[str] = mapped_column(String(64))
    node: Mapped[str | None] = mapped_column(String(255), nullable=True)
    position: Mapped[int] = mapped_column(Integer)
    depends_on: Mapped[list[str]] = mapped_column(JSON, default=list)
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    next_attempt_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    memo: Mapped[JSONObject] = mapped_column(JSON, default=dict)
    output: Mapped[JSONObject] = mapped_column(JSON, default=dict)
    details: Mapped[JSONObject] = mapped_column(JSON, default=dict)
    notes: Mapped[list[StepNote]] = mapped_column(JSON, default=list)
    reason: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AuditRow(Base):
    __tablename__ = "action_audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action_id: Mapped[str] = mapped_column(ForeignKey("actions.id", ondelete="CASCADE"),
                                           index=True)
    command: Mapped[str] = mapped_column(String(32))
    user: Mapped[str | None] = mapped_column(String(255), nullable=True)
    marker: Mapped[str | None] = mapped_column(String(64), nullable=True)
    at: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(255), default="accepted")
