"""Promenade over HTTP: health, decommission, remove-from-cluster, node status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.context import RequestContext
from common.errors import NotFound
from common.httpclient import ServiceClient
from shipyard_api.clients.ports import NodeWatch

P = "/api/v1.0"
DECOMMISSION_PARAMS = ("drain-node-timeout", "drain-node-grace-period", "clear-labels-timeout",
                       "remove-etcd-timeout", "etcd-ready-timeout")


class PromenadeClient:
    """Implements PromenadePort on a ServiceClient (marker and idempotency keys forwarded)."""

    def __init__(self, client: ServiceClient, *, margin: float = 60.0) -> None:
        self._client = client
        self._margin = margin

    def healthy(self, ctx: RequestContext) -> bool:
        return self._client.raw("GET", f"{P}/health", ctx=ctx, read_timeout=10.0).status_code \
            == 204

    def decommission(self, node: str, design_ref: str, timeouts: Mapping[str, int], *,
                     ctx: RequestContext, key: str, fenced: bool = False) -> dict[str, Any]:
        params: dict[str, Any] = {k: int(v) for k, v in timeouts.items()
                                  if k in DECOMMISSION_PARAMS}
        # Promenade is synchronous: wait as long as all its phases may take, plus a margin.
        wait = sum(v for k, v in params.items() if k != "drain-node-grace-period")
        if fenced:
            params["fenced"] = "true"
        body = {"rel": "design", "href": design_ref, "type": "application/x-yaml"}
        result = self._client.request("POST", f"{P}/nodes/{node}/decommission", ctx=ctx,
                                      params=params, json_body=body, idempotency_key=key,
                                      read_timeout=float(wait) + self._margin)
        return dict(result or {})

    def cancel_decommission(self, node: str, *, ctx: RequestContext) -> None:
        self._client.request("POST", f"{P}/nodes/{node}/decommission/cancel", ctx=ctx)

    def remove_from_cluster(self, node: str, *, ctx: RequestContext,
                            key: str) -> dict[str, Any]:
        result = self._client.request("POST", f"{P}/nodes/{node}/remove-from-cluster", ctx=ctx,
                                      idempotency_key=key)
        return dict(result or {})

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch:
        """The node view once the Node changed after `since` (Promenade's long-poll on a
        Kubernetes watch), or after `wait` seconds unchanged; at once without `since`."""
        params = {"since": since, "wait": f"{wait:g}"} if since and wait > 0 else None
        response = self._client.raw("GET", f"{P}/nodes/{node}", ctx=ctx, params=params,
                                    read_timeout=wait + 30.0)
        if response.status_code == 404:
            return NodeWatch(None, None)
        if response.status_code >= 400:
            raise self._client.error(response)
        return NodeWatch(dict(response.json() or {}), response.headers.get("X-Node-Version"),
                         busy=response.headers.get("X-Long-Poll") == "busy")

    def node_status(self, node: str, *, ctx: RequestContext) -> dict[str, Any] | None:
        try:
            result = self._client.request("GET", f"{P}/nodes/{node}", ctx=ctx)
        except NotFound:
            return None
        return dict(result or {})

    def decommission_preview(self, node: str, design_ref: str, *, fenced: bool,
                             leaving: list[str], ctx: RequestContext) -> dict[str, Any]:
        """What a decommission would do now (Promenade's read-only preview)."""
        params = {"fenced": "true" if fenced else "false"}
        if leaving:
            params["leaving"] = ",".join(leaving)
        body = {"rel": "design", "href": design_ref, "type": "application/x-yaml"}
        result = self._client.request("POST", f"{P}/nodes/{node}/decommission/preview",
                                      ctx=ctx, params=params, json_body=body)
        return dict(result or {})
