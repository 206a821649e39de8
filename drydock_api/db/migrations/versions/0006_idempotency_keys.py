"""idempotency_keys: Idempotency-Key entries of POST requests, shared by every Drydock API
process (common.idempotency_store).

Revision ID: 0006_idempotency_keys
Revises: 0005_designs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_idempotency_keys"
down_revision = "0005_designs"
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
