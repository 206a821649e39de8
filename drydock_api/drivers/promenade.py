"""Promenade's node-labels endpoint through common.httpclient (the Labeller port)."""

from __future__ import annotations

from urllib.parse import quote

from common.context import RequestContext
from common.httpclient import ServiceClient


class PromenadeLabeller:
    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def put_labels(self, node: str, labels: dict[str, str], ctx: RequestContext) -> None:
        self._client.request("PUT", f"/api/v1.0/node-labels/{quote(node, safe='')}", ctx=ctx,
                             json_body=labels)


class FakeLabeller:
    """Records the labels put per node (unit tests)."""

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {}

    def put_labels(self, node: str, labels: dict[str, str], ctx: RequestContext) -> None:
        self.labels[node] = dict(labels)
