"""Committing the buffer: validate its rendered documents, then tag it `committed`."""

from __future__ import annotations

from common.context import RequestContext
from common.errors import Conflict
from common.jsontypes import JSONObject
from common.status import status_body
from shipyard_api.documents.lock import DocumentsLocked
from shipyard_api.documents.store import DocumentStore
from shipyard_api.documents.validation import CommitValidator
from shipyard_api.documents.versions import COMMITTED_TAG, Version


class EmptyBuffer(Conflict):
    reason, title = "EmptyBuffer", "Nothing to commit"


def commit(store: DocumentStore, validator: CommitValidator, *, force: bool = False,
           dryrun: bool = False, ctx: RequestContext | None = None) -> JSONObject:
    """The status body of a commit; its `code` is 200 when committed (or would be), else 400.

    force commits despite validation errors; dryrun validates and tags nothing.
    """
    with store.lock.held() as owner:
        revision = store.revision_id(Version.BUFFER)
        if revision is None or not store.buffer_changes():
            raise EmptyBuffer("The buffer is empty; stage documents with POST "
                              "/api/v1.0/configdocs/{collection} before committing")
        messages = validator.validate(revision, ctx)
        errors = sum(1 for m in messages if m.get("error"))
        ok = errors == 0 or force
        if ok and not dryrun:
            if not store.lock.holds(owner):
                raise DocumentsLocked("The document lock expired during validation; retry")
            store.add_tag(revision, COMMITTED_TAG, {
                "user": ctx.end_user or ctx.user if ctx else None, "forced": errors > 0})
    message = "Validations succeeded" if errors == 0 else f"Validations failed ({errors} errors)"
    if errors and force:
        message = f"FORCED: {message}; committed anyway"
    if dryrun:
        message = f"DRYRUN: {message}; nothing committed"
    details = {"revision_id": revision, "committed": ok and not dryrun, "forced": bool(
        errors and force), "dryrun": dryrun}
    return status_body(200 if ok else 400, message,
                       reason="Success" if ok else "ValidationFailure",
                       messages=messages, extra=details)
