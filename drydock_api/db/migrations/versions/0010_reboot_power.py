"""Reboot requests: each request's power policy and grace period and what it got; the node's
last power-off (nodes.power).

Revision ID: 0010_reboot_power
Revises: 0009_budget_slots
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_reboot_power"
down_revision = "0009_budget_slots"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reboot_requests") as batch:
        batch.add_column(sa.Column("power_policy", sa.String(16)))
        batch.add_column(sa.Column("grace_period", sa.Float))
        batch.add_column(sa.Column("power", sa.JSON))
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("last_power_off", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("last_power_off")
    with op.batch_alter_table("reboot_requests") as batch:
        batch.drop_column("power")
        batch.drop_column("grace_period")
        batch.drop_column("power_policy")
