"""Node state: teardown, power and reboot bookkeeping, node leases; reboot requests.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COLUMNS = [
    sa.Column("torn_down", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("design_ref", sa.JSON),
    sa.Column("power_state", sa.String(16)),
    sa.Column("pending_reboot_since", sa.Float),
    sa.Column("last_powered_on", sa.Float),
    sa.Column("shutdown_mode", sa.String(8)),
    sa.Column("shutdown_started", sa.Float),
    sa.Column("lease_owner", sa.String(255)),
    sa.Column("lease_expires", sa.Float),
]


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        for column in COLUMNS:
            batch.add_column(column)
    op.create_table(
        "reboot_requests",
        sa.Column("node", sa.String(255), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("mode", sa.String(8), nullable=False),
        sa.Column("value", sa.JSON),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("created_by", sa.String(255)),
    )


def downgrade() -> None:
    op.drop_table("reboot_requests")
    with op.batch_alter_table("nodes") as batch:
        for column in COLUMNS:
            batch.drop_column(column.name)
