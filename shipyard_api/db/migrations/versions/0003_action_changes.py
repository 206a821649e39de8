"""actions.changes: bumped by every write of a listed field, so one sum (read from an index
of that column alone) tells the action list changed.

Revision ID: 0003_action_changes
Revises: 0002_workflow
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_action_changes"
down_revision = "0002_workflow"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("actions") as batch:
        batch.add_column(sa.Column("changes", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_actions_changes", "actions", ["changes"])


def downgrade() -> None:
    op.drop_index("ix_actions_changes", table_name="actions")
    with op.batch_alter_table("actions") as batch:
        batch.drop_column("changes")
