"""DocumentStore: immutable revisions of collections, the buffer, versions and tags."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from common.clients.shipyard import Revision, design_ref
from common.crypto import Cipher
from common.documents import BASE_SCHEMA, Document, doc_ref
from common.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, ValidationFailed
from common.jsontypes import JSON, JSONObject
from common.status import Message, validation_message
from shipyard_api.documents import audit
from shipyard_api.documents.diff import (
    BufferMode,
    CollectionStatus,
    by_collection,
    check_buffer_mode,
    collection_statuses,
)
from shipyard_api.documents.layering import Doc, format_problems
from shipyard_api.documents.lock import WriteLock
from shipyard_api.documents.models import DocumentRow, RevisionRow, TagRow
from shipyard_api.documents.render import REDACTED, render
from shipyard_api.documents.versions import (
    COMMITTED_TAG,
    SITE_ACTION_TAGS,
    SITE_ACTION_VERSIONS,
    VERSION_TAGS,
    Version,
    parse_version,
)

Pair = tuple[str, Document]


class TagView(TypedDict):
    """A revision's tag as GET .../tags/{tag} shows it."""

    tag: str
    revision: int
    data: JSON
    createdAt: str


class CollectionDiff(TypedDict):
    """One collection's status going from one version to another."""

    collection_name: str
    base_version: str
    base_revision: int
    new_version: str
    new_revision: int
    new_status: str
TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$")
COLLECTION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
POLICIES = ("cleartext", "encrypted")
DEFAULT_MAX_DOCUMENTS = 10_000


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class PutResult:
    """Outcome of staging a collection: the buffer revision and whether it is new."""

    revision_id: int
    created: bool
    status: CollectionStatus


class DocumentStore:
    """The site design's revisions in Shipyard's database (Deckhand's model, one service)."""

    def __init__(self, session_factory: sessionmaker[Session], *, cipher: Cipher,
                 clock: Callable[[], datetime] = utcnow, lease_seconds: float = 300.0,
                 max_documents: int = DEFAULT_MAX_DOCUMENTS) -> None:
        self._sessions = session_factory
        self._cipher = cipher
        self._clock = clock
        self.max_documents = max_documents  # per upload ([documents] max_documents)
        self.lock = WriteLock(session_factory, clock=clock, lease_seconds=lease_seconds)

    # ----- versions -------------------------------------------------------------------
    def revision_id(self, version: str | Version) -> int | None:
        """The revision a version names; buffer is None when nothing is staged past commit."""
        v = parse_version(version)
        with self._sessions() as session:
            if v is Version.BUFFER:
                latest = _latest(session)
                committed = _tagged(session, (COMMITTED_TAG,))
                return latest if latest and (committed is None or latest > committed) else None
            return _tagged(session, VERSION_TAGS[v])

    def view_revision(self, version: str | Version) -> int | None:
        """The revision to show for a version: the buffer view is the latest revision."""
        v = parse_version(version)
        if v is Version.BUFFER:
            with self._sessions() as session:
                return _latest(session)
        return self.revision_id(v)

    # ----- reading --------------------------------------------------------------------
    def revisions(self) -> list[Revision]:
        with self._sessions() as session:
            revs = session.scalars(select(RevisionRow).order_by(RevisionRow.id)).all()
            tags = session.execute(select(TagRow.revision_id, TagRow.tag)).all()
            buckets = session.execute(
                select(DocumentRow.revision_id, DocumentRow.collection).distinct()).all()
        out: list[Revision] = []
        for rev in revs:
            out.append({
                "id": rev.id, "createdAt": rev.created_at.isoformat(),
                "createdBy": rev.created_by,
                "tags": sorted(t for r, t in tags if r == rev.id),
                "buckets": sorted(c for r, c in buckets if r == rev.id),
            })
        return out

    def pairs(self, revision_id: int, *, cleartext: bool = True) -> list[Pair]:
        """(collection, document) of a revision in order; 404 when it does not exist."""
        with self._sessions() as session:
            if session.get(RevisionRow, revision_id) is None:
                raise NotFound(f"Revision {revision_id} does not exist",
                               reason="RevisionNotFound")
            rows = _rows(session, revision_id)
        return [(r.collection, self._decode(r, cleartext)) for r in rows]

    def documents(self, revision_id: int, *, cleartext: bool = True,
                  collection: str | None = None) -> list[Document]:
        pairs = self.pairs(revision_id, cleartext=cleartext)
        return [d for c, d in pairs if collection is None or c == collection]

    def rendered(self, revision_id: int, *,
                 cleartext: bool = True) -> tuple[list[Document], list[Message]]:
        """Rendered documents and the problems met while rendering (layering, substitution;
        secrets are read in cleartext to render, then redacted unless `cleartext`)."""
        return render(self.documents(revision_id, cleartext=True), cleartext=cleartext)

    def rendered_or_refused(self, revision_id: int, *, cleartext: bool = True) -> list[Document]:
        """Rendered documents as Deckhand serves them: 400 listing every rendering error."""
        docs, messages = self.rendered(revision_id, cleartext=cleartext)
        errors = [m for m in messages if m.get("error")]
        if errors:
            raise ValidationFailed(f"Revision {revision_id} cannot be rendered "
                                   f"({len(errors)} errors)", reason="RenderingFailed",
                                   messages=errors)
        return docs

    def rendered_documents(self, revision_id: int, *, cleartext: bool = True) -> list[Document]:
        return self.rendered(revision_id, cleartext=cleartext)[0]

    def _decode(self, row: DocumentRow, cleartext: bool) -> Document:
        if row.encrypted:
            data = json.loads(self._cipher.decrypt(row.data)) if cleartext else REDACTED
        else:
            data = json.loads(row.data)
        return {"schema": row.schema, "metadata": json.loads(row.metadata_json), "data": data}

    # ----- diffs ----------------------------------------------------------------------
    def _contents(self, revision_id: int | None) -> dict[str, dict[tuple[str, ...], str]]:
        return by_collection(self.pairs(revision_id)) if revision_id else {}

    def diff(self, base: str | Version, new: str | Version) -> list[CollectionDiff]:
        """Per collection: created|modified|deleted|unmodified going from `base` to `new`.
        As in Airship, a site-action version that does not exist (no site action tagged a
        revision yet) is 404 VersionNotFound; a missing buffer or committed version compares
        as revision 0 (nothing)."""
        bv, nv = parse_version(base, param="base_version"), parse_version(new,
                                                                          param="diff_version")
        base_rev, new_rev = self.view_revision(bv), self.view_revision(nv)
        for version, revision in ((bv, base_rev), (nv, new_rev)):
            if revision is None and version in SITE_ACTION_VERSIONS:
                raise NotFound(f"The {version.value} version does not exist: no site action "
                               "has tagged a revision of the design yet",
                               reason="VersionNotFound")
        base_rev, new_rev = base_rev or 0, new_rev or 0
        statuses = collection_statuses(self._contents(base_rev), self._contents(new_rev))
        return [{"collection_name": name, "base_version": bv.value, "base_revision": base_rev,
                 "new_version": nv.value, "new_revision": new_rev, "new_status": status.value}
                for name, status in statuses.items()]

    def buffer_changes(self) -> dict[str, CollectionStatus]:
        """The buffer's collections against committed (empty dict: the buffer is empty)."""
        buffer = self.revision_id(Version.BUFFER)
        if buffer is None:
            return {}
        changes = collection_statuses(
            self._contents(self.revision_id(Version.COMMITTED)), self._contents(buffer))
        return {c: s for c, s in changes.items() if s is not CollectionStatus.UNMODIFIED}

    # ----- writing --------------------------------------------------------------------
    def put_collection(self, collection: str, docs: list[Document], mode: BufferMode, *,
                       user: str | None = None) -> PutResult:
        """Stage `docs` as `collection` (empty list: delete it) under the buffer rules."""
        if not COLLECTION_RE.match(collection):
            raise BadRequest(f"Invalid collection name {collection!r}",
                             reason="InvalidCollection")
        check_count(len(docs), self.max_documents)
        check_documents(docs)
        with self.lock.held():
            changes = self.buffer_changes()
            check_buffer_mode(mode, collection, changes)
            committed = self.revision_id(Version.COMMITTED)
            latest = self.view_revision(Version.BUFFER)
            base = committed if mode is BufferMode.REPLACE and changes else latest
            base_pairs = self.pairs(base) if base else []
            _check_other_collections(collection, docs, base_pairs)
            new_pairs = [p for p in base_pairs if p[0] != collection] + [
                (collection, d) for d in docs]
            committed_contents = self._contents(committed)
            new_contents = by_collection(new_pairs)
            status = collection_statuses(committed_contents, new_contents).get(
                collection, CollectionStatus.UNMODIFIED)
            if latest and new_contents == self._contents(latest):
                return PutResult(latest, False, status)
            revision = self._insert_revision(
                new_pairs, user, lambda s, rev: audit.staged(s, collection, latest, rev,
                                                             status.value, len(docs)))
            return PutResult(revision, True, status)

    def _insert_revision(self, pairs: list[Pair], user: str | None,
                         audited: Callable[[Session, int], None]) -> int:
        now = self._clock().astimezone(UTC).replace(tzinfo=None)
        with self._sessions() as session, session.begin():
            rev = RevisionRow(created_at=now, created_by=user)
            session.add(rev)
            session.flush()
            session.add_all(self._encode(rev.id, i, c, d) for i, (c, d) in enumerate(pairs))
            audited(session, rev.id)
            return rev.id

    def _encode(self, revision_id: int, position: int, collection: str,
                doc: Document) -> DocumentRow:
        meta = doc["metadata"]
        encrypted = meta.get("storagePolicy") == "encrypted"
        data = json.dumps(doc.get("data"), sort_keys=True)
        return DocumentRow(
            revision_id=revision_id, collection=collection, position=position,
            schema=doc["schema"], name=meta["name"], layer=layer_of(doc),
            metadata_json=json.dumps(meta),
            data=self._cipher.encrypt(data) if encrypted else data, encrypted=encrypted)

    # ----- tags -----------------------------------------------------------------------
    def tags(self, revision_id: int) -> list[TagView]:
        with self._sessions() as session:
            _require_revision(session, revision_id)
            rows = session.scalars(select(TagRow).where(TagRow.revision_id == revision_id)
                                   .order_by(TagRow.tag)).all()
            return [_tag_view(r) for r in rows]

    def tag(self, revision_id: int, tag: str) -> TagView:
        with self._sessions() as session:
            _require_revision(session, revision_id)
            row = _tag_row(session, revision_id, tag)
            return _tag_view(row)

    def add_tag(self, revision_id: int, tag: str,
                data: JSONObject | None = None) -> TagView:
        """Tag a revision (a second time replaces the tag's data)."""
        if not TAG_RE.match(tag):
            raise BadRequest(f"Invalid tag {tag!r}: letters, digits and ._:- only",
                             reason="InvalidTag")
        now = self._clock().astimezone(UTC).replace(tzinfo=None)
        for _ in range(2):
            try:
                with self._sessions() as session, session.begin():
                    _require_revision(session, revision_id)
                    row = session.scalars(select(TagRow).where(
                        TagRow.revision_id == revision_id, TagRow.tag == tag)).first()
                    old = None if row is None else json.loads(row.data_json or "{}")
                    if row is None:
                        row = TagRow(revision_id=revision_id, tag=tag, created_at=now)
                        session.add(row)
                    row.data_json = json.dumps(data or {})
                    row.created_at = now
                    session.flush()
                    audit.tagged(session, revision_id, tag, old, data or {})
                    return _tag_view(row)
            except IntegrityError:
                continue  # a concurrent writer added the same tag: update it instead
        raise Conflict(f"Tag {tag} on revision {revision_id} is being written concurrently")

    def delete_tag(self, revision_id: int, tag: str) -> None:
        with self._sessions() as session, session.begin():
            _require_revision(session, revision_id)
            row = _tag_row(session, revision_id, tag)
            session.delete(row)
            audit.tagged(session, revision_id, tag, json.loads(row.data_json or "{}"), None)

    def intermediate_commits(self, using_revision: int) -> list[int]:
        """Committed revisions without a site-action tag since the last site action,
        other than `using_revision` (revision 0 when no site action was ever tagged)."""
        with self._sessions() as session:
            last = _tagged(session, SITE_ACTION_TAGS) or 0
            committed = session.scalars(
                select(TagRow.revision_id).where(TagRow.tag == COMMITTED_TAG,
                                                 TagRow.revision_id > last)).all()
        return sorted(r for r in set(committed) if r != using_revision)

    def design_ref(self, revision_id: int, base_url: str) -> str:
        """The Deckhand-style href peers resolve to this revision's rendered documents."""
        return design_ref(base_url, revision_id)


def _latest(session: Session) -> int | None:
    return session.scalar(select(func.max(RevisionRow.id)))


def _tagged(session: Session, tags: Iterable[str]) -> int | None:
    return session.scalar(select(func.max(TagRow.revision_id)).where(TagRow.tag.in_(list(tags))))


def _rows(session: Session, revision_id: int) -> list[DocumentRow]:
    return list(session.scalars(select(DocumentRow).where(DocumentRow.revision_id == revision_id)
                                .order_by(DocumentRow.position)).all())


def _require_revision(session: Session, revision_id: int) -> None:
    if session.get(RevisionRow, revision_id) is None:
        raise NotFound(f"Revision {revision_id} does not exist", reason="RevisionNotFound")


def _tag_row(session: Session, revision_id: int, tag: str) -> TagRow:
    row = session.scalars(select(TagRow).where(TagRow.revision_id == revision_id,
                                               TagRow.tag == tag)).first()
    if row is None:
        raise NotFound(f"Revision {revision_id} has no tag {tag}", reason="TagNotFound")
    return row


def _tag_view(row: TagRow) -> TagView:
    return {"tag": row.tag, "revision": row.revision_id, "data": json.loads(row.data_json),
            "createdAt": row.created_at.isoformat()}


def check_count(count: int, limit: int) -> None:
    """413 when an upload holds more than `limit` documents ([documents] max_documents)."""
    if count > limit:
        raise PayloadTooLarge(f"The upload holds {count} documents; at most {limit} are "
                              "accepted in one collection upload ([documents] max_documents)",
                              reason="TooManyDocuments")


def check_documents(docs: list[Document]) -> None:
    """Structure (with Deckhand's layeringDefinition and substitutions), storage policy and
    uniqueness of staged documents; 400 listing every fault."""
    import jsonschema

    messages: list[Message] = []
    seen: set[tuple[str, str, str]] = set()
    validator = jsonschema.Draft202012Validator(BASE_SCHEMA)
    for i, doc in enumerate(docs):
        ref = doc_ref(doc)
        for err in validator.iter_errors(doc):
            path = "/".join(str(p) for p in err.absolute_path) or "(root)"
            messages.append(validation_message(
                f"document {i} ({ref['schema']} {ref['name']}): {path}: {err.message}",
                name="DocumentStructure", documents=[ref], diagnostic=path))
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        policy = (meta or {}).get("storagePolicy", "cleartext")
        if policy not in POLICIES:
            messages.append(validation_message(
                f"{ref['schema']} {ref['name']}: storagePolicy must be cleartext or encrypted",
                name="DocumentStructure", documents=[ref]))
        messages += format_problems(Doc(i, doc, doc.get("data")))
        key = (ref["schema"], layer_of(doc), ref["name"])
        if key in seen:
            messages.append(validation_message(
                f"Duplicate document {ref['schema']} {ref['name']} (layer {key[1] or 'none'}) "
                "in the collection", name="DuplicateDocument", documents=[ref]))
        seen.add(key)
    if messages:
        raise ValidationFailed("Documents are malformed", messages=messages)


def layer_of(doc: Document) -> str:
    """A document's Deckhand layer ("" when it has none): with schema and name, its key."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ld = (meta or {}).get("layeringDefinition")
    layer = ld.get("layer") if isinstance(ld, dict) else None
    return layer if isinstance(layer, str) else ""


def _key(doc: Document) -> tuple[str, str, str]:
    return doc_ref(doc)["schema"], layer_of(doc), doc_ref(doc)["name"]


def _check_other_collections(collection: str, docs: list[Document],
                             base: list[Pair]) -> None:
    owners = {_key(d): c for c, d in base if c != collection}
    clashes = [(doc_ref(d), owners[_key(d)]) for d in docs if _key(d) in owners]
    if clashes:
        raise Conflict(
            "Documents already exist in another collection",
            reason="DocumentInOtherCollection",
            messages=[validation_message(
                f"{ref['schema']} {ref['name']} already exists in collection {owner}",
                name="DuplicateDocument", documents=[ref]) for ref, owner in clashes])
