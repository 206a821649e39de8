"""Promenade's node-labels endpoint through common.httpclient (the Labeller port)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from common.context import RequestContext
from common.httpclient import ServiceClient
from drydock_api.drivers.ports import JoinState


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


READ_MARGIN = 30.0  # seconds beyond a long-poll's wait before its read times out


class PromenadeJoin:
    """JoinChecker through Promenade's GET /nodes/{name} (kubelet readiness)."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def node_ready(self, node: str, ctx: RequestContext, *, since: str | None = None,
                   wait: float = 0.0) -> JoinState:
        """Promenade's long-poll when `since` is given: answered once the Node changed."""
        params = {"since": since, "wait": f"{wait:g}"} if since and wait > 0 else None
        response = self._client.raw("GET", f"/api/v1.0/nodes/{quote(node, safe='')}",
                                    ctx=ctx, params=params, read_timeout=wait + READ_MARGIN)
        if response.status_code == 404:
            return JoinState(None)
        if response.status_code >= 400:
            raise self._client.error(response)
        busy = response.headers.get("X-Long-Poll") == "busy"
        ready = is_ready(((response.json() or {}).get("kubelet") or {}).get("ready"))
        return JoinState(ready, None if busy else response.headers.get("X-Node-Version"))


class FakeJoin:
    """Kubernetes readiness per node name (unit tests); absent = not known to Kubernetes."""

    def __init__(self) -> None:
        self.ready: dict[str, bool] = {}

    def node_ready(self, node: str, ctx: RequestContext, *, since: str | None = None,
                   wait: float = 0.0) -> JoinState:
        return JoinState(self.ready.get(node))
