"""Node records: the disks a preserving teardown kept, and why a reboot could not act.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = [
    sa.Column("kept_disks", sa.JSON),
    sa.Column("reboot_error", sa.Text),
]


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        for column in COLUMNS:
            batch.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        for column in COLUMNS:
            batch.drop_column(column.name)
