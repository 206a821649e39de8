"""Tables of the document store: immutable revisions, their documents, tags, the write lock."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from shipyard_api.db import Base

LOCK_NAME = "documents"


class RevisionRow(Base):
    """One immutable snapshot of every collection."""

    __tablename__ = "doc_revisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    created_by: Mapped[str | None] = mapped_column(String(255), nullable=True)


class DocumentRow(Base):
    """A document of a revision; `data` is JSON, or a Fernet token when `encrypted`."""

    __tablename__ = "doc_documents"
    __table_args__ = (UniqueConstraint("revision_id", "schema", "layer", "name",
                                       name="uq_doc_documents_revision_schema_layer_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    revision_id: Mapped[int] = mapped_column(
        ForeignKey("doc_revisions.id", ondelete="CASCADE"), nullable=False, index=True)
    collection: Mapped[str] = mapped_column(String(255), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    schema: Mapped[str] = mapped_column(String(255), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    layer: Mapped[str] = mapped_column(String(255), nullable=False, default="",
                                       server_default="")  # Deckhand's layer ("" for none)
    metadata_json: Mapped[str] = mapped_column(Text, nullable=False)
    data: Mapped[str] = mapped_column(Text, nullable=False)
    encrypted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class TagRow(Base):
    """A tag on a revision (committed, site-action-success, ...) with optional data."""

    __tablename__ = "doc_tags"
    __table_args__ = (UniqueConstraint("revision_id", "tag", name="uq_doc_tags_revision_tag"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    revision_id: Mapped[int] = mapped_column(
        ForeignKey("doc_revisions.id", ondelete="CASCADE"), nullable=False, index=True)
    tag: Mapped[str] = mapped_column(String(255), nullable=False)
    data_json: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)


class LockRow(Base):
    """The document write lock, held by a lease (`lease_owner`, `lease_expires` epoch s)."""

    __tablename__ = "doc_locks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    lease_owner: Mapped[str | None] = mapped_column(String(255), nullable=True)
    lease_expires: Mapped[float | None] = mapped_column(Float, nullable=True)
