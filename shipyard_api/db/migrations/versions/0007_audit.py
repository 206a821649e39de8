"""audit_entries and audit_heads: the hash-chained audit log of every state change (common.audit).

Revision ID: 0007_audit
Revises: 0006_idempotency_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_audit"
down_revision = "0006_idempotency_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_heads",
        sa.Column("stream", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_table(
        "audit_entries",
        sa.Column("stream", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("object", sa.String(255), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_audit_entries_at", "audit_entries", ["at"])
    op.create_index("ix_audit_entries_object", "audit_entries", ["object"])


def downgrade() -> None:
    op.drop_index("ix_audit_entries_object", "audit_entries")
    op.drop_index("ix_audit_entries_at", "audit_entries")
    op.drop_table("audit_entries")
    op.drop_table("audit_heads")
