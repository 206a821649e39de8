"""Tasks, task messages, node records and the admission lock.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("parent_id", sa.String(36), index=True),
        sa.Column("root_id", sa.String(36), nullable=False, index=True),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("node", sa.String(255)),
        sa.Column("step", sa.String(64)),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("result_message", sa.Text),
        sa.Column("design_ref", sa.JSON),
        sa.Column("node_filter", sa.JSON),
        sa.Column("options", sa.JSON),
        sa.Column("node_names", sa.JSON),
        sa.Column("data", sa.JSON),
        sa.Column("successes", sa.JSON),
        sa.Column("failures", sa.JSON),
        sa.Column("idempotency_key", sa.String(255), unique=True),
        sa.Column("created_by", sa.String(255)),
        sa.Column("context_marker", sa.String(64)),
        sa.Column("created", sa.Float, nullable=False, index=True),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("completed", sa.Float),
        sa.Column("terminate_requested", sa.Boolean, nullable=False),
        sa.Column("terminated_by", sa.String(255)),
        sa.Column("lease_owner", sa.String(255)),
        sa.Column("lease_expires", sa.Float),
    )
    op.create_table(
        "task_messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(36), nullable=False, index=True),
        sa.Column("node_task_id", sa.String(36), index=True),
        sa.Column("root_id", sa.String(36), nullable=False, index=True),
        sa.Column("node", sa.String(255)),
        sa.Column("step", sa.String(64)),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("error", sa.Boolean, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("retired", sa.Boolean, nullable=False),
        sa.Column("retired_reason", sa.Text),
        sa.Column("last_task_id", sa.String(36)),
        sa.Column("updated", sa.Float, nullable=False),
    )
    locks = op.create_table(
        "locks",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("counter", sa.Integer, nullable=False),
    )
    op.bulk_insert(locks, [{"name": "admission", "counter": 0}])


def downgrade() -> None:
    for table in ("locks", "nodes", "task_messages", "tasks"):
        op.drop_table(table)
