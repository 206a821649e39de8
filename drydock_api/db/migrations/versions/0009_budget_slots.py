"""Failure-domain budget slots: which holder has taken a node of which domain out of service,
until when (a lease), and the lock row that serialises every taking of a slot.

Revision ID: 0009_budget_slots
Revises: 0008_audit
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_budget_slots"
down_revision = "0008_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "budget_slots",
        sa.Column("holder", sa.String(255), primary_key=True),
        sa.Column("domain", sa.String(255), primary_key=True),
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("budget", sa.Integer, nullable=False),
        sa.Column("description", sa.String(1024)),
        sa.Column("taken", sa.Float, nullable=False),
        sa.Column("lease_expires", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("holder", "domain", name="pk_budget_slots"),
    )
    op.create_index("ix_budget_slots_domain", "budget_slots", ["domain"])
    locks = sa.table("locks", sa.column("name", sa.String), sa.column("counter", sa.Integer))
    op.bulk_insert(locks, [{"name": "budgets", "counter": 0}])


def downgrade() -> None:
    op.execute("DELETE FROM locks WHERE name = 'budgets'")
    op.drop_index("ix_budget_slots_domain", table_name="budget_slots")
    op.drop_table("budget_slots")
