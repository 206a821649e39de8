"""decommission_runs: one row per decommission run (its request's fingerprint, its phases'
states, attempts, times and outcomes, the process holding it), so a Promenade restarted
mid-decommission resumes the same run and a replayed request joins it.

Revision ID: 0002_decommission_runs
Revises: 0001_idempotency_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_decommission_runs"
down_revision = "0001_idempotency_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decommission_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("node", sa.String(253), nullable=False),
        sa.Column("active_node", sa.String(253), unique=True),  # the node while it runs
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("phase", sa.String(32)),
        sa.Column("phases", sa.JSON, nullable=False),
        sa.Column("status_code", sa.Integer),
        sa.Column("result", sa.JSON),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("takeovers", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.Column("lease_owner", sa.String(255)),
        sa.Column("lease_expires", sa.Float),
    )
    op.create_index("ix_decommission_runs_node", "decommission_runs", ["node", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_decommission_runs_node", "decommission_runs")
    op.drop_table("decommission_runs")
