"""Drydock's Labeller port on Promenade's one client (the relabel_nodes task action)."""

from __future__ import annotations

from collections.abc import Mapping

from common.clients.promenade import PromenadeClient
from common.context import RequestContext
from common.httpclient import ServiceClient


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
