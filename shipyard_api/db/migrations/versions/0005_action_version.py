"""actions.version: bumped by every write that changes an action's own view (its row, a
step, an audit entry), so one primary-key read tells a cached GET /actions/{id} body is
current.

Revision ID: 0005_action_version
Revises: 0004_plans
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_action_version"
down_revision = "0004_plans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("actions") as batch:
        batch.add_column(sa.Column("version", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("actions") as batch:
        batch.drop_column("version")
