"""Node records: the node's current teardown (steps done, disks attested, why it stopped).

Revision ID: 0007_node_teardown
Revises: 0006_idempotency_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_node_teardown"
down_revision = "0006_idempotency_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("teardown", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("teardown")
