"""SQLAlchemy models: tasks (top-level, per node, per step), their messages, node records."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from common.jsontypes import JSON as JSONData
from common.jsontypes import JSONObject


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    })


class TaskRow(Base):
    """One task: a top-level task (parent_id NULL), a node subtask, or a node-step subtask."""

    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(36), index=True)
    root_id: Mapped[str] = mapped_column(String(36), index=True)
    action: Mapped[str] = mapped_column(String(64))
    node: Mapped[str | None] = mapped_column(String(255))
    step: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), index=True)
    result: Mapped[str] = mapped_column(String(16))
    result_message: Mapped[str | None] = mapped_column(Text)
    design_ref: Mapped[Any] = mapped_column(JSON, nullable=True)
    # The digest of the design kept when the task was admitted (table designs); NULL on
    # subtasks and on tasks admitted before designs were kept by digest.
    design_digest: Mapped[str | None] = mapped_column(String(64), index=True)
    node_filter: Mapped[Any] = mapped_column(JSON, nullable=True)
    options: Mapped[JSONObject | None] = mapped_column(JSON, nullable=True)
    node_names: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    data: Mapped[JSONData] = mapped_column(JSON, nullable=True)
    successes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    failures: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True)
    created_by: Mapped[str | None] = mapped_column(String(255))
    context_marker: Mapped[str | None] = mapped_column(String(64))
    created: Mapped[float] = mapped_column(Float, index=True)
    updated: Mapped[float] = mapped_column(Float)
    completed: Mapped[float | None] = mapped_column(Float)
    terminate_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    terminated_by: Mapped[str | None] = mapped_column(String(255))
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires: Mapped[float | None] = mapped_column(Float)
    # On a top-level task: one more on every write to a task of its tree (the tree cache
    # keys on it); 0 on subtasks.
    changes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class MessageRow(Base):
    """A task message; `root_id`/`node_task_id` let every level of the tree list its own."""

    __tablename__ = "task_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(String(36), index=True)
    node_task_id: Mapped[str | None] = mapped_column(String(36), index=True)
    root_id: Mapped[str] = mapped_column(String(36), index=True)
    node: Mapped[str | None] = mapped_column(String(255))
    step: Mapped[str | None] = mapped_column(String(64))
    ts: Mapped[float] = mapped_column(Float)
    error: Mapped[bool] = mapped_column(Boolean)
    body: Mapped[JSONObject] = mapped_column(JSON)


class NodeRecord(Base):
    """What Drydock remembers about a node beyond the design: retirement, last task."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    retired: Mapped[bool] = mapped_column(Boolean, default=False)
    retired_reason: Mapped[str | None] = mapped_column(Text)
    last_task_id: Mapped[str | None] = mapped_column(String(36))
    updated: Mapped[float] = mapped_column(Float)
    torn_down: Mapped[bool] = mapped_column(Boolean, default=False)
    design_ref: Mapped[JSONData] = mapped_column(JSON, nullable=True)
    power_state: Mapped[str | None] = mapped_column(String(16))
    pending_reboot_since: Mapped[float | None] = mapped_column(Float)
    last_powered_on: Mapped[float | None] = mapped_column(Float)
    shutdown_mode: Mapped[str | None] = mapped_column(String(8))
    shutdown_started: Mapped[float | None] = mapped_column(Float)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires: Mapped[float | None] = mapped_column(Float)
    kept_disks: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    reboot_error: Mapped[str | None] = mapped_column(Text)
    # The node's teardown since it was last deployed (tasks.teardown): steps done, disks
    # attested erased, and where it stopped.
    teardown: Mapped[JSONObject | None] = mapped_column(JSON, nullable=True)
    # The last power-off of a reboot: its policy and what the node got (nodes.power).
    last_power_off: Mapped[JSONObject | None] = mapped_column(JSON, nullable=True)


class RebootRow(Base):
    """One reboot request on a node; key '' is the unkeyed (set-and-forget) request."""

    __tablename__ = "reboot_requests"

    node: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    mode: Mapped[str] = mapped_column(String(8))
    value: Mapped[JSONData] = mapped_column(JSON, nullable=True)
    created: Mapped[float] = mapped_column(Float)
    created_by: Mapped[str | None] = mapped_column(String(255))
    power_policy: Mapped[str | None] = mapped_column(String(16))  # NULL: by mode
    grace_period: Mapped[float | None] = mapped_column(Float)  # NULL: the design's default
    # power: what the request got (nodes.power)
    power: Mapped[JSONObject | None] = mapped_column(JSON, nullable=True)


class LockRow(Base):
    """Named rows locked by UPDATE to serialise admission of new tasks across replicas."""

    __tablename__ = "locks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    counter: Mapped[int] = mapped_column(Integer, default=0)


class DesignRow(Base):
    """The documents of a design as resolved when a task was admitted, by their digest (a
    content address: a row never changes); encrypted, for they hold BMC credentials."""

    __tablename__ = "designs"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    href: Mapped[str] = mapped_column(String(2048))  # the reference it was admitted by
    documents: Mapped[str] = mapped_column(Text)  # Fernet token of the documents' JSON
    used: Mapped[float] = mapped_column(Float)  # when a task was last admitted with it


class BudgetSlotRow(Base):
    """One failure-domain slot: `holder` keeps `node` of `domain` (e.g. "rack:rack02") out
    of service until `lease_expires` (epoch seconds) unless it renews."""

    __tablename__ = "budget_slots"

    holder: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True, index=True)
    node: Mapped[str] = mapped_column(String(255))
    budget: Mapped[int] = mapped_column(Integer)
    description: Mapped[str | None] = mapped_column(String(1024))
    taken: Mapped[float] = mapped_column(Float)
    lease_expires: Mapped[float] = mapped_column(Float)


class BootActionContextRow(Base):
    """A node's boot action context of its latest deploy: the task and the hash of the key
    the node must present (X-Bootaction-Key); `refusals` the last requests refused."""

    __tablename__ = "boot_action_contexts"

    node: Mapped[str] = mapped_column(String(255), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(36))
    key_hash: Mapped[str] = mapped_column(String(64))
    design_ref: Mapped[JSONData] = mapped_column(JSON, nullable=True)
    created: Mapped[float] = mapped_column(Float)
    refusals: Mapped[list[JSONObject] | None] = mapped_column(JSON, nullable=True)


class BootActionRow(Base):
    """One boot action of one node's deploy: its status and the node's report messages."""

    __tablename__ = "boot_actions"

    action_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    node: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255))
    task_id: Mapped[str] = mapped_column(String(36), index=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    signaling: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16))
    details: Mapped[list[JSONObject] | None] = mapped_column(JSON, nullable=True)
    created: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float)
