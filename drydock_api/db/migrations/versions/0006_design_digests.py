"""Designs kept by digest (content address), encrypted; each task records its design's digest.

The 0005 rows held the documents in clear (BMC credentials among them) and are dropped: a task
admitted before this revision has no digest and reads its design by href, fetched once again.

Revision ID: 0006_design_digests
Revises: 0005_designs
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_design_digests"
down_revision = "0005_designs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_table("designs")
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
    op.create_table(
        "designs",
        sa.Column("href", sa.String(2048), primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("documents", sa.JSON),
        sa.Column("stored", sa.Float, nullable=False),
    )
