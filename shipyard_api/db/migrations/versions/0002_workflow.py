"""Workflow tables: actions, action steps, command audit.

Revision ID: 0002_workflow
Revises: 0001_documents
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_workflow"
down_revision = "0001_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", sa.String(26), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("parameters", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("marker", sa.String(64), nullable=False),
        sa.Column("user", sa.String(255), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("next_run_at", sa.Float, nullable=False),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_expires", sa.Float, nullable=True),
        sa.Column("revision_id", sa.Integer, nullable=True),
        sa.Column("site_wide", sa.Boolean, nullable=False),
        sa.Column("target_nodes", sa.JSON, nullable=False),
        sa.Column("reason", sa.String(64), nullable=True),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("validations", sa.JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_actions"),
    )
    op.create_index("ix_actions_state", "actions", ["state"])
    op.create_index("ix_actions_next_run_at", "actions", ["next_run_at"])
    op.create_table(
        "action_steps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action_id", sa.String(26),
                  sa.ForeignKey("actions.id", ondelete="CASCADE",
                                name="fk_action_steps_action_id_actions"), nullable=False),
        sa.Column("step_id", sa.String(300), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("node", sa.String(255), nullable=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("depends_on", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("next_attempt_at", sa.Float, nullable=True),
        sa.Column("memo", sa.JSON, nullable=False),
        sa.Column("output", sa.JSON, nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.Column("notes", sa.JSON, nullable=False),
        sa.Column("reason", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_action_steps"),
        sa.UniqueConstraint("action_id", "step_id", name="uq_action_steps_action_id"),
    )
    op.create_index("ix_action_steps_action_id", "action_steps", ["action_id"])
    op.create_table(
        "action_audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action_id", sa.String(26),
                  sa.ForeignKey("actions.id", ondelete="CASCADE",
                                name="fk_action_audit_action_id_actions"), nullable=False),
        sa.Column("command", sa.String(32), nullable=False),
        sa.Column("user", sa.String(255), nullable=True),
        sa.Column("marker", sa.String(64), nullable=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("outcome", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_action_audit"),
    )
    op.create_index("ix_action_audit_action_id", "action_audit", ["action_id"])


def downgrade() -> None:
    op.drop_table("action_audit")
    op.drop_table("action_steps")
    op.drop_table("actions")
