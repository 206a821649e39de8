"""Promenade's wire types (schemas/openapi/promenade.yaml) and its one HTTP client."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard, get_args

from common.api import API_PREFIX as P
from common.clients.generated.promenade import (
    DecommissionPreview,
    DrainProgress,
    EtcdMembership,
    Kubelet,
    NodeView,
    Pods,
    PreviewPhase,
    ReadyStatus,
)
from common.context import RequestContext
from common.httpclient import ServiceClient
from common.jsontypes import JSONObject
from common.urlpath import node_path

DECOMMISSION_PARAMS = ("drain-node-timeout", "drain-node-grace-period", "clear-labels-timeout",
                       "remove-etcd-timeout", "etcd-ready-timeout")
READ_MARGIN = 30.0  # seconds beyond a long-poll's wait before its read times out
VERSION_HEADER = "X-Node-Version"
LONG_POLL_HEADER = "X-Long-Poll"
__all__ = ["DecommissionPreview", "DrainProgress", "EtcdMembership", "Kubelet", "NodeView",
           "NodeWatch", "Pods", "PreviewPhase", "PromenadeClient", "ReadyStatus",
           "node_ready", "ready_status"]


def ready_status(value: str) -> ReadyStatus:
    """A Ready condition's status as the wire carries it: anything unknown is "Unknown"."""
    return value if _is_ready_status(value) else "Unknown"


def _is_ready_status(value: str) -> TypeGuard[ReadyStatus]:
    return value in get_args(ReadyStatus)


def node_ready(view: NodeView | None) -> bool:
    """Whether Promenade's node view says the kubelet is Ready (`kubelet.ready` is the Ready
    condition's status: "True", "False" or "Unknown")."""
    return view is not None and view.get("kubelet", {}).get("ready") == "True"


@dataclass(frozen=True)
class NodeWatch:
    """Promenade's node view as a long-poll answered it (None: not known to Kubernetes);
    `version` None or `busy`: poll at an interval instead."""

    status: NodeView | None
    version: str | None
    busy: bool = False


def _node(node: str, tail: str = "") -> str:
    """The node's URL: one quoted segment, never a dot segment (InvalidNodeName)."""
    return node_path(f"{P}/nodes", node, tail)


def _design(href: str) -> dict[str, str]:
    return {"rel": "design", "href": href, "type": "application/x-yaml"}


class PromenadeClient:
    """Promenade over a ServiceClient (marker and idempotency keys forwarded)."""

    def __init__(self, client: ServiceClient, *, margin: float = 60.0) -> None:
        self._client = client
        self._margin = margin

    def healthy(self, ctx: RequestContext) -> bool:
        return self._client.raw("GET", f"{P}/health", ctx=ctx, read_timeout=10.0).status_code \
            == 204

    def decommission(self, node: str, design_ref: str, timeouts: Mapping[str, int], *,
                     ctx: RequestContext, key: str, fenced: bool = False,
                     disrupt: Mapping[str, str] | None = None) -> JSONObject:
        """The status body of a finished decommission (Promenade is synchronous);
        `disrupt`: disrupt-pdbs and disrupt-after, the operator's leave (ctx's end user)."""
        times = {k: int(v) for k, v in timeouts.items() if k in DECOMMISSION_PARAMS}
        # Wait as long as all its phases may take, plus a margin.
        wait = sum(v for k, v in times.items() if k != "drain-node-grace-period")
        params: dict[str, int | str] = dict(times)
        if fenced:
            params["fenced"] = "true"
        params.update(disrupt or {})
        result = self._client.request("POST", _node(node, "/decommission"), ctx=ctx,
                                      params=params, json_body=_design(design_ref),
                                      idempotency_key=key,
                                      read_timeout=float(wait) + self._margin)
        return dict(result or {})

    def cancel_decommission(self, node: str, *, ctx: RequestContext) -> None:
        self._client.request("POST", _node(node, "/decommission/cancel"), ctx=ctx)

    def remove_from_cluster(self, node: str, *, ctx: RequestContext,
                            key: str) -> JSONObject:
        result = self._client.request("POST", _node(node, "/remove-from-cluster"), ctx=ctx,
                                      idempotency_key=key)
        return dict(result or {})

    def join_etcd(self, node: str, design_ref: str, timeout: int, *, ctx: RequestContext,
                  key: str) -> JSONObject:
        """The node's etcd members back as learners, promoted once in sync (synchronous)."""
        result = self._client.request("POST", _node(node, "/join-etcd"), ctx=ctx,
                                      params={"timeout": int(timeout)},
                                      json_body=_design(design_ref), idempotency_key=key,
                                      read_timeout=float(timeout) + self._margin)
        return dict(result or {})

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch:
        """The node view once the Node changed after `since` (Promenade's long-poll on a
        Kubernetes watch), or after `wait` seconds unchanged; at once without `since`."""
        params = {"since": since, "wait": f"{wait:g}"} if since and wait > 0 else None
        response = self._client.raw("GET", _node(node), ctx=ctx, params=params,
                                    read_timeout=wait + READ_MARGIN)
        if response.status_code == 404:
            return NodeWatch(None, None)
        if response.status_code >= 400:
            raise self._client.error(response)
        busy = response.headers.get(LONG_POLL_HEADER) == "busy"
        return NodeWatch(response.json() or None, response.headers.get(VERSION_HEADER), busy)

    def node_status(self, node: str, *, ctx: RequestContext) -> NodeView | None:
        return self.watch_node(node, since=None, wait=0.0, ctx=ctx).status

    def decommission_preview(self, node: str, design_ref: str, *, fenced: bool,
                             leaving: list[str], ctx: RequestContext) -> DecommissionPreview:
        """What a decommission would do now (Promenade's read-only preview)."""
        params = {"fenced": "true" if fenced else "false"}
        if leaving:
            params["leaving"] = ",".join(leaving)
        result: DecommissionPreview = self._client.request(
            "POST", _node(node, "/decommission/preview"), ctx=ctx, params=params,
            json_body=_design(design_ref))
        return result

    def put_labels(self, node: str, labels: Mapping[str, str], ctx: RequestContext) -> None:
        """The node ends with exactly these labels (kubernetes.io labels kept)."""
        self._client.request("PUT", node_path(f"{P}/node-labels", node), ctx=ctx,
                             json_body=dict(labels))
