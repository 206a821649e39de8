"""Designs kept at task admission, by digest (content address) and encrypted; each task
records its design's digest.

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
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("href", sa.String(2048), nullable=False),
        sa.Column("documents", sa.Text, nullable=False),
        sa.Column("used", sa.Float, nullable=False),
    )
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("design_digest", sa.String(64)))
        batch.create_index("ix_tasks_design_digest", ["design_digest"])


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_index("ix_tasks_design_digest")
        batch.drop_column("design_digest")
    op.drop_table("designs")
