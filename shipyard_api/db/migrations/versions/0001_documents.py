"""Document store: revisions, documents, tags and the write lock.

Revision ID: 0001_documents
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001_documents"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "doc_revisions",
        sa.Column("id", sa.Integer(), autoincrement=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_doc_revisions"),
    )
    op.create_table(
        "doc_documents",
        sa.Column("id", sa.Integer(), autoincrement=True),
        sa.Column("revision_id", sa.Integer(), nullable=False),
        sa.Column("collection", sa.String(255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("schema", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("encrypted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_doc_documents"),
        sa.ForeignKeyConstraint(["revision_id"], ["doc_revisions.id"], ondelete="CASCADE",
                                name="fk_doc_documents_revision_id_doc_revisions"),
        sa.UniqueConstraint("revision_id", "schema", "name",
                            name="uq_doc_documents_revision_schema_name"),
    )
    op.create_index("ix_doc_documents_revision_id", "doc_documents", ["revision_id"])
    op.create_table(
        "doc_tags",
        sa.Column("id", sa.Integer(), autoincrement=True),
        sa.Column("revision_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(255), nullable=False),
        sa.Column("data_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_doc_tags"),
        sa.ForeignKeyConstraint(["revision_id"], ["doc_revisions.id"], ondelete="CASCADE",
                                name="fk_doc_tags_revision_id_doc_revisions"),
        sa.UniqueConstraint("revision_id", "tag", name="uq_doc_tags_revision_tag"),
    )
    op.create_index("ix_doc_tags_revision_id", "doc_tags", ["revision_id"])
    locks = op.create_table(
        "doc_locks",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_expires", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_doc_locks"),
    )
    op.bulk_insert(locks, [{"name": "documents", "lease_owner": None, "lease_expires": None}])


def downgrade() -> None:
    op.drop_table("doc_locks")
    op.drop_index("ix_doc_tags_revision_id", table_name="doc_tags")
    op.drop_table("doc_tags")
    op.drop_index("ix_doc_documents_revision_id", table_name="doc_documents")
    op.drop_table("doc_documents")
    op.drop_table("doc_revisions")
