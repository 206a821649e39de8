"""Configdocs, rendered documents, commits, revisions and tags (Airship/Deckhand paths)."""

from __future__ import annotations

import re

import falcon
import yaml

from common.api import API_PREFIX as P
from common.body import YAML_TYPES, limits, loads_checked, read_raw
from common.bodyschema import require_schema
from common.documents import Document, dump_yaml_all, load_yaml, parse_documents
from common.errors import BadRequest, Forbidden, NotFound, UnsupportedMediaType
from common.inputcheck import require_safe
from common.jsontypes import JSON, JSONObject, as_int, as_object
from common.policy import authorize, check
from common.status import simple_message, status_body
from shipyard_api.documents.commit import commit
from shipyard_api.documents.deps import DocumentDeps, build_document_deps
from shipyard_api.documents.diff import BufferMode
from shipyard_api.documents.store import DocumentStore, check_count
from shipyard_api.documents.validation import CommitValidator
from shipyard_api.documents.versions import Version, parse_version

__all__ = ["build_document_deps", "document_routes"]
CLEARTEXT_RULE = "shipyard:get_configdocs_cleartext"
YAML_TYPE = "application/x-yaml"
MAX_REVISION = 2**31 - 1  # revision ids are 32-bit integer columns (PostgreSQL INTEGER)


def _media_type(req: falcon.Request) -> str:
    return (req.content_type or "").split(";")[0].strip().lower()


def _cleartext(req: falcon.Request, *, default_allowed: bool) -> bool:
    """cleartext-secrets=true needs the cleartext rule (403); revisions default to it."""
    wanted = req.get_param_as_bool("cleartext-secrets")
    try:
        check(req, CLEARTEXT_RULE)
        allowed = True
    except Forbidden:
        if wanted:
            raise
        allowed = False
    if wanted is None:
        return allowed and default_allowed
    return wanted


def _send_docs(req: falcon.Request, resp: falcon.Response, docs: list[Document]) -> None:
    if req.client_prefers([YAML_TYPE, "application/json"]) == "application/json":
        resp.media = docs
        return
    resp.content_type = YAML_TYPE
    resp.text = dump_yaml_all(docs) if docs else ""


def _send_status(resp: falcon.Response, body: JSONObject) -> None:
    resp.status = falcon.code_to_http_status(as_int(body["code"]))
    resp.media = body


# A line starting with the document marker starts a YAML document (even inside a block
# scalar): a count of documents, less any that are empty, taken without parsing.
DOCUMENT_START = re.compile(rb"^---(?=[ \t\r\n]|$)", re.MULTILINE)


def document_starts(data: bytes) -> int:
    """How many documents a YAML stream starts (the first may have no marker)."""
    markers = len(DOCUMENT_START.findall(data))
    first = DOCUMENT_START.search(data)
    head = data[:first.start()] if first else data
    leading = any(line.strip() and not line.lstrip().startswith((b"#", b"%"))
                  for line in head.splitlines())
    return markers + (1 if leading else 0)


def _revision(value: str) -> int:
    try:
        revision = int(value)
    except ValueError:
        revision = 0
    if not 0 < revision <= MAX_REVISION:
        raise BadRequest(f"Revision id must be an integer from 1 to {MAX_REVISION}, not {value!r}",
                         reason="InvalidRevision")
    return revision


def _version_revision(store: DocumentStore, req: falcon.Request) -> tuple[Version, int]:
    version = parse_version(req.get_param("version") or Version.BUFFER.value)
    revision = store.view_revision(version)
    if revision is None:
        raise NotFound(f"There is no {version.value} version of the documents",
                       reason="VersionNotFound")
    return version, revision


class ConfigDocsResource:
    """POST stages a collection in the buffer; GET shows a collection at a version."""

    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:create_configdocs")
    def on_post(self, req: falcon.Request, resp: falcon.Response, collection: str) -> None:
        raw = req.get_param("buffermode") or BufferMode.REJECT_ON_CONTENTS.value
        try:
            mode = BufferMode(raw.lower())
        except ValueError:
            raise BadRequest(f"Unknown buffermode {raw!r}; use append, replace or "
                             "rejectoncontents", reason="InvalidBufferMode") from None
        docs = self._read_docs(req)
        result = self._store.put_collection(collection, docs, mode,
                                            user=req.context.berth.end_user)
        text = (f"Collection {collection} staged in the buffer ({result.status.value})"
                if docs else f"Collection {collection} is empty: deleted in the buffer")
        _send_status(resp, status_body(201, text, messages=[simple_message(text, error=False)],
                                       extra={"collection": collection,
                                              "revision_id": result.revision_id,
                                              "collection_status": result.status.value,
                                              "new_revision": result.created}))

    def _read_docs(self, req: falcon.Request) -> list[Document]:
        data = read_raw(req, req.context.max_body_bytes)
        if not data.strip():
            if not req.get_param_as_bool("empty-collection"):
                raise BadRequest("The body is empty; send YAML documents, or "
                                 "empty-collection=true to delete the collection in the buffer",
                                 reason="EmptyBody")
            return []
        if _media_type(req) not in YAML_TYPES:
            raise UnsupportedMediaType(f"Content-Type must be {YAML_TYPE}, not "
                                       f"{req.content_type or 'missing'}")
        check_count(document_starts(data), self._store.max_documents)  # before parsing
        return parse_documents(data, max_bytes=req.context.max_body_bytes)

    @authorize("shipyard:get_configdocs")
    def on_get(self, req: falcon.Request, resp: falcon.Response, collection: str) -> None:
        cleartext = _cleartext(req, default_allowed=False)
        version, revision = _version_revision(self._store, req)
        pairs = self._store.pairs(revision, cleartext=cleartext)
        if not any(c == collection for c, _ in pairs):
            raise NotFound(f"Collection {collection} does not exist in the {version.value} "
                           f"version (revision {revision})", reason="CollectionNotFound")
        _send_docs(req, resp, [d for c, d in pairs if c == collection])


class ConfigDocsStatusResource:
    """GET: every collection's status between two versions (default committed → buffer)."""

    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:get_configdocs_status")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        versions = [v for value in req.get_param_as_list("versions") or []
                    for v in value.split(",") if v]
        base, new = req.get_param("base_version"), req.get_param("diff_version")
        if versions and (base or new):
            raise BadRequest("Use either versions or base_version/diff_version, not both")
        if versions and len(versions) != 2:
            raise BadRequest(f"versions needs exactly two versions, got {len(versions)}",
                             reason="InvalidVersion")
        if versions:
            base, new = versions
        diff = self._store.diff(base or Version.COMMITTED.value, new or Version.BUFFER.value)
        # Airship's base_status: whether the collection exists in the base version.
        resp.media = [{**c, "base_status": "not present" if c["new_status"] == "created"
                       else "present"} for c in diff]


class RenderedConfigDocsResource:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:get_renderedconfigdocs")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        cleartext = _cleartext(req, default_allowed=False)
        _, revision = _version_revision(self._store, req)
        _send_docs(req, resp, self._store.rendered_or_refused(revision, cleartext=cleartext))


class CommitConfigDocsResource:
    def __init__(self, store: DocumentStore, validator: CommitValidator) -> None:
        self._store = store
        self._validator = validator

    @authorize("shipyard:commit_configdocs")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = commit(self._store, self._validator,
                      force=bool(req.get_param_as_bool("force")),
                      dryrun=bool(req.get_param_as_bool("dryrun")), ctx=req.context.berth)
        _send_status(resp, body)


class RevisionsResource:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:list_revisions")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        results = self._store.revisions()
        resp.media = {"count": len(results), "results": results}


class RevisionDocumentsResource:
    """A revision's documents as stored (`rendered=True`: as rendered), Deckhand-style."""

    def __init__(self, store: DocumentStore, *, rendered: bool) -> None:
        self._store = store
        self._rendered = rendered

    @authorize("shipyard:get_revision_documents")
    def on_get(self, req: falcon.Request, resp: falcon.Response, revision_id: str) -> None:
        revision = _revision(revision_id)
        cleartext = _cleartext(req, default_allowed=True)
        if self._rendered:
            docs = self._store.rendered_or_refused(revision, cleartext=cleartext)
        else:
            docs = self._store.documents(revision, cleartext=cleartext)
        schema, name = req.get_param("schema"), req.get_param("metadata.name")
        docs = [d for d in docs if (not schema or d.get("schema") == schema)
                and (not name or (d.get("metadata") or {}).get("name") == name)]
        _send_docs(req, resp, docs)


class RevisionTagsResource:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:list_revisions")
    def on_get(self, req: falcon.Request, resp: falcon.Response, revision_id: str) -> None:
        resp.media = self._store.tags(_revision(revision_id))


class RevisionTagResource:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    @authorize("shipyard:list_revisions")
    def on_get(self, req: falcon.Request, resp: falcon.Response, revision_id: str,
               tag: str) -> None:
        resp.media = self._store.tag(_revision(revision_id), tag)

    @authorize("shipyard:manage_tags")
    def on_post(self, req: falcon.Request, resp: falcon.Response, revision_id: str,
                tag: str) -> None:
        revision = _revision(revision_id)
        data = _read_tag_data(req)
        if data is not None:
            require_schema("shipyard", "TagData", data, "Invalid tag data", reason="InvalidTag")
        # the schema's TagData is an object
        resp.media = self._store.add_tag(revision, tag, None if data is None else as_object(data))
        resp.status = falcon.HTTP_201

    @authorize("shipyard:manage_tags")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, revision_id: str,
                  tag: str) -> None:
        self._store.delete_tag(_revision(revision_id), tag)
        resp.status = falcon.HTTP_204


def _read_tag_data(req: falcon.Request) -> JSON:
    data = read_raw(req, req.context.max_body_bytes)
    if not data.strip():
        return None
    media = _media_type(req)
    try:
        if media == "application/json":
            parsed: JSON = loads_checked(data, limits(req))
            return parsed
        if media in YAML_TYPES:
            value: JSON = load_yaml(data)
            require_safe(value, limits(req), what="tag data")
            return value
    except RecursionError as exc:
        raise BadRequest("Tag data nested too deeply", reason="UnsafeInput") from exc
    except (ValueError, yaml.YAMLError) as exc:
        raise BadRequest(f"Malformed tag data: {exc}") from exc
    raise UnsupportedMediaType(f"Tag data must be application/json or {YAML_TYPE}, not "
                               f"{req.content_type or 'missing'}")


def document_routes(store: DocumentStore, validator: CommitValidator,
                    *_: object) -> list[tuple[str, object]]:
    """The document routes to add to Shipyard's app."""
    return [
        (f"{P}/configdocs", ConfigDocsStatusResource(store)),
        (f"{P}/configdocs/{{collection}}", ConfigDocsResource(store)),
        (f"{P}/renderedconfigdocs", RenderedConfigDocsResource(store)),
        (f"{P}/commitconfigdocs", CommitConfigDocsResource(store, validator)),
        (f"{P}/revisions", RevisionsResource(store)),
        (f"{P}/revisions/{{revision_id}}/documents",
         RevisionDocumentsResource(store, rendered=False)),
        (f"{P}/revisions/{{revision_id}}/rendered-documents",
         RevisionDocumentsResource(store, rendered=True)),
        (f"{P}/revisions/{{revision_id}}/tags", RevisionTagsResource(store)),
        (f"{P}/revisions/{{revision_id}}/tags/{{tag}}", RevisionTagResource(store)),
    ]


def routes_of(deps: DocumentDeps) -> list[tuple[str, object]]:
    return document_routes(deps.store, deps.validator)
