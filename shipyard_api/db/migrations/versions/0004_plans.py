"""Plans: what an action would do, stored with an expiry so an action can be created from one.

Revision ID: 0004_plans
Revises: 0003_action_changes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_plans"
down_revision = "0003_action_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plans",
        sa.Column("id", sa.String(26), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("parameters", sa.JSON, nullable=False),
        sa.Column("user", sa.String(255), nullable=True),
        sa.Column("marker", sa.String(64), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("revision_id", sa.Integer, nullable=True),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("facts", sa.JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_plans"),
    )
    op.create_index("ix_plans_expires_at", "plans", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_plans_expires_at", table_name="plans")
    op.drop_table("plans")
