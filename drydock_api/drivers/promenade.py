"""Drydock's Labeller and JoinChecker ports on Promenade's one client."""

from __future__ import annotations

from collections.abc import Mapping

from common.clients.promenade import PromenadeClient, node_ready
from common.context import RequestContext
from common.httpclient import ServiceClient
from drydock_api.drivers.ports import JoinState


class PromenadeLabeller:
    def __init__(self, client: ServiceClient) -> None:
        self._promenade = PromenadeClient(client)

    def put_labels(self, node: str, labels: Mapping[str, str], ctx: RequestContext) -> None:
        self._promenade.put_labels(node, labels, ctx)


class FakeLabeller:
    """Records the labels put per node (unit tests)."""

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {}

    def put_labels(self, node: str, labels: Mapping[str, str], ctx: RequestContext) -> None:
        self.labels[node] = dict(labels)


class PromenadeJoin:
    """JoinChecker through Promenade's GET /nodes/{name} (kubelet readiness)."""

    def __init__(self, client: ServiceClient) -> None:
        self._promenade = PromenadeClient(client)

    def node_ready(self, node: str, ctx: RequestContext, *, since: str | None = None,
                   wait: float = 0.0) -> JoinState:
        """Promenade's long-poll when `since` is given: answered once the Node changed."""
        watch = self._promenade.watch_node(node, since=since, wait=wait, ctx=ctx)
        if watch.status is None:
            return JoinState(None)
        return JoinState(node_ready(watch.status), None if watch.busy else watch.version)


class FakeJoin:
    """Kubernetes readiness per node name (unit tests); absent = not known to Kubernetes."""

    def __init__(self) -> None:
        self.ready: dict[str, bool] = {}

    def node_ready(self, node: str, ctx: RequestContext, *, since: str | None = None,
                   wait: float = 0.0) -> JoinState:
        return JoinState(self.ready.get(node))
