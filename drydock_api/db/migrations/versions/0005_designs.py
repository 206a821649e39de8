"""Designs kept at task admission: a task's design reference is resolved once, by the API,
and workers read the documents from here.

Revision ID: 0005_designs
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_designs"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "designs",
        sa.Column("href", sa.String(2048), primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("documents", sa.JSON),
        sa.Column("stored", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("designs")
