"""Shipyard's wire types (schemas/openapi/shipyard.yaml) and the client its peers use."""

from common.api import API_PREFIX as P
from common.clients.generated.shipyard import Revision, Revisions
from common.context import RequestContext
from common.httpclient import ServiceClient

__all__ = ["COMMITTED_TAG", "Revision", "Revisions", "ShipyardClient", "design_ref"]

COMMITTED_TAG = "committed"


def design_ref(base_url: str, revision_id: int) -> str:
    """The Deckhand-style href by which peers read a revision's rendered documents."""
    base = base_url.rstrip("/")
    if base.startswith(("http://", "https://")):
        base = "deckhand+" + base
    return f"{base}{P}/revisions/{revision_id}/rendered-documents"


class ShipyardClient:
    """Shipyard over a ServiceClient."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def revisions(self, ctx: RequestContext) -> list[Revision]:
        body: Revisions = self._client.request("GET", f"{P}/revisions", ctx=ctx)
        return body["results"]

    def committed_revision(self, ctx: RequestContext) -> int | None:
        """The newest revision tagged committed, or None."""
        ids = [r["id"] for r in self.revisions(ctx) if COMMITTED_TAG in r.get("tags", [])]
        return max(ids, default=None)
