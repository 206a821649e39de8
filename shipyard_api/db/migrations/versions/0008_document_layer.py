"""doc_documents.layer: a revision holds one document per (schema, layer, name), as Deckhand
does, so a replacement document (same schema and name, another layer) can be stored.

Revision ID: 0008_document_layer
Revises: 0007_audit
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0008_document_layer"
down_revision = "0007_audit"
branch_labels = None
depends_on = None


def _layer(metadata_json: str) -> str:
    try:
        meta = json.loads(metadata_json)
        layer = (meta.get("layeringDefinition") or {}).get("layer")
    except (ValueError, AttributeError):
        return ""
    return layer if isinstance(layer, str) else ""


def upgrade() -> None:
    with op.batch_alter_table("doc_documents") as batch:
        batch.add_column(sa.Column("layer", sa.String(255), nullable=False, server_default=""))
    docs = sa.table("doc_documents", sa.column("id", sa.Integer),
                    sa.column("metadata_json", sa.Text), sa.column("layer", sa.String))
    conn = op.get_bind()
    for row in conn.execute(sa.select(docs.c.id, docs.c.metadata_json)).all():
        layer = _layer(row.metadata_json)
        if layer:
            conn.execute(docs.update().where(docs.c.id == row.id).values(layer=layer))
    with op.batch_alter_table("doc_documents") as batch:
        batch.drop_constraint("uq_doc_documents_revision_schema_name", type_="unique")
        batch.create_unique_constraint("uq_doc_documents_revision_schema_layer_name",
                                       ["revision_id", "schema", "layer", "name"])


def downgrade() -> None:
    with op.batch_alter_table("doc_documents") as batch:
        batch.drop_constraint("uq_doc_documents_revision_schema_layer_name", type_="unique")
        batch.create_unique_constraint("uq_doc_documents_revision_schema_name",
                                       ["revision_id", "schema", "name"])
        batch.drop_column("layer")
