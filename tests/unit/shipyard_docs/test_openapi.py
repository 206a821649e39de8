"""Every document route and method is described in Shipyard's OpenAPI document."""

from __future__ import annotations

from common.app import load_openapi
from shipyard_api.documents.store import DocumentStore
from shipyard_api.documents.validation import CommitValidator
from shipyard_api.resources.documents import document_routes

METHODS = ("get", "post", "put", "patch", "delete")


def test_document_routes_match_the_openapi_document(sqlite_store: DocumentStore) -> None:
    routes = document_routes(sqlite_store, CommitValidator(sqlite_store, [], public_url="x"))
    served = {(t, m) for t, r in routes for m in METHODS if hasattr(r, f"on_{m}")}
    paths = load_openapi("shipyard")["paths"]
    documented = {(p, m) for p, ops in paths.items() for m in ops if m in METHODS
                  and (p.startswith("/api/v1.0/configdocs") or p.startswith("/api/v1.0/revisions")
                       or p in ("/api/v1.0/renderedconfigdocs", "/api/v1.0/commitconfigdocs"))}
    assert served == documented
