"""Promenade's node-labels endpoint through common.httpclient (the Labeller port)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from common.context import RequestContext
from common.errors import NotFound
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


def is_ready(value: Any) -> bool:
    """Promenade's `kubelet.ready` is the Ready condition's status, "True", "False" or
    "Unknown" (a boolean is taken as it is)."""
    return value is True or value == "True"


class PromenadeJoin:
    """JoinChecker through Promenade's GET /nodes/{name} (kubelet readiness)."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def node_ready(self, node: str, ctx: RequestContext) -> bool | None:
        try:
            body = self._client.request("GET", f"/api/v1.0/nodes/{quote(node, safe='')}",
                                        ctx=ctx)
        except NotFound:
            return None
        return is_ready(((body or {}).get("kubelet") or {}).get("ready"))


class FakeJoin:
    """Kubernetes readiness per node name (unit tests); absent = not known to Kubernetes."""

    def __init__(self) -> None:
        self.ready: dict[str, bool] = {}

    def node_ready(self, node: str, ctx: RequestContext) -> bool | None:
        return self.ready.get(node)
