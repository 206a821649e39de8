"""Boot actions: each node's boot action context of its latest deploy (the hash of the key the
node presents) and one row per boot action with its status and the node's reports.

Revision ID: 0011_boot_actions
Revises: 0010_reboot_power
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_boot_actions"
down_revision = "0010_reboot_power"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "boot_action_contexts",
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("task_id", sa.String(36), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("design_ref", sa.JSON),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("refusals", sa.JSON),
        sa.PrimaryKeyConstraint("node", name=op.f("pk_boot_action_contexts")),
    )
    op.create_table(
        "boot_actions",
        sa.Column("action_id", sa.String(26), nullable=False),
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("task_id", sa.String(36), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("signaling", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("details", sa.JSON),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_boot_actions")),
    )
    op.create_index(op.f("ix_boot_actions_node"), "boot_actions", ["node"])
    op.create_index(op.f("ix_boot_actions_task_id"), "boot_actions", ["task_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_boot_actions_task_id"), table_name="boot_actions")
    op.drop_index(op.f("ix_boot_actions_node"), table_name="boot_actions")
    op.drop_table("boot_actions")
    op.drop_table("boot_action_contexts")
