"""idempotency_keys: Idempotency-Key entries of POST requests (a replayed decommission gets
the first answer, or 409 RequestInProgress while it runs), shared by every Promenade API
process and kept across restarts (common.idempotency_store).

Revision ID: 0001_idempotency_keys
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_idempotency_keys"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(255)),
        sa.Column("lease_expires", sa.Float),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("expires", sa.Float, nullable=False),
        sa.Column("status", sa.String(64)),
        sa.Column("content_type", sa.String(255)),
        sa.Column("headers", sa.JSON),
        sa.Column("body", sa.LargeBinary),
    )
    op.create_index("ix_idempotency_keys_expires", "idempotency_keys", ["expires"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_expires", "idempotency_keys")
    op.drop_table("idempotency_keys")
