"""Drydock over HTTP: health, create a task, read a task with its subtask errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.context import RequestContext
from common.httpclient import ServiceClient
from shipyard_api.clients.ports import TaskWatch

P = "/api/v1.0"
VERSION_HEADER = "X-Task-Version"
WAITED_HEADER = "X-Long-Poll"
READ_MARGIN = 30.0  # seconds beyond a long-poll's wait before the read times out


class DrydockClient:
    """Implements DrydockPort on a ServiceClient (marker and idempotency keys forwarded)."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def healthy(self, ctx: RequestContext) -> bool:
        return self._client.raw("GET", f"{P}/health", ctx=ctx, read_timeout=10.0).status_code \
            == 204

    def create_task(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                    options: Mapping[str, Any], *, ctx: RequestContext,
                    key: str) -> dict[str, Any]:
        body = {"action": action, "design_ref": design_ref, "node_filter": node_filter,
                "options": dict(options)}
        result = self._client.request("POST", f"{P}/tasks", ctx=ctx, json_body=body,
                                      idempotency_key=key)
        return dict(result or {})

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        """The task itself with its subtasks' errors (cheap enough to poll)."""
        result = self._client.request("GET", f"{P}/tasks/{task_id}", ctx=ctx,
                                      params={"subtaskerrors": "true"})
        return dict(result or {})

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        """The task once its version differs from `since` (Drydock's long-poll), or after
        `wait` seconds unchanged; at once without `since`."""
        params = {"subtaskerrors": "true"}
        if since is not None and wait > 0:
            params.update(since=since, wait=f"{wait:g}")
        response = self._client.raw("GET", f"{P}/tasks/{task_id}", ctx=ctx, params=params,
                                    read_timeout=wait + READ_MARGIN)
        if response.status_code >= 400:
            raise self._client.error(response)
        return TaskWatch(dict(response.json() or {}), response.headers.get(VERSION_HEADER),
                         busy=response.headers.get(WAITED_HEADER) == "busy")

    def terminate_task(self, task_id: str, *, ctx: RequestContext) -> None:
        self._client.request("POST", f"{P}/tasks/{task_id}/terminate", ctx=ctx)

    def node(self, name: str, design_ref: str, *, ctx: RequestContext) -> dict[str, Any]:
        """One node as Drydock sees it now: BMC power state (or why unknown), MAAS status."""
        result = self._client.request("GET", f"{P}/nodes/{name}", ctx=ctx,
                                      params={"design_ref": design_ref})
        return dict(result or {})

    def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        """Every task of the tree by id, plus `init_task_id` (Drydock's layers=-1 view)."""
        result = self._client.request("GET", f"{P}/tasks/{task_id}", ctx=ctx,
                                      params={"subtaskerrors": "true", "layers": "-1"})
        return dict(result or {})

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[dict[str, Any]]:
        """Drydock's view of every node (or only the (un)retired ones, whose BMCs alone are
        asked): MAAS status, power state, retirement."""
        params = {"design_ref": design_ref} if design_ref else {}
        if retired is not None:
            params["retired"] = "true" if retired else "false"
        result = self._client.request("GET", f"{P}/nodes", ctx=ctx, params=params or None)
        return [dict(n) for n in result or []]

    def wipe_plan(self, design_ref: str, nodes: list[str], options: Mapping[str, Any], *,
                  ctx: RequestContext) -> list[dict[str, Any]]:
        """How destroy_nodes would keep or wipe each disk of `nodes`, or why it refuses one
        (Drydock's POST /wipeplan; nothing is touched)."""
        result = self._client.request("POST", f"{P}/wipeplan", ctx=ctx, json_body={
            "design_ref": design_ref, "node_names": list(nodes), "options": dict(options)})
        return [dict(n) for n in result or []]

    def select_nodes(self, design_ref: str, node_filter: dict[str, Any] | None, *,
                     ctx: RequestContext) -> list[str]:
        """Names of the design's nodes a node filter selects (Drydock's POST /nodefilter)."""
        result = self._client.request("POST", f"{P}/nodefilter", ctx=ctx, json_body={
            "design_ref": design_ref, "node_filter": node_filter})
        return [str(n) for n in result or []]

    def task_preview(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                     options: Mapping[str, Any], *, ctx: RequestContext) -> dict[str, Any]:
        """What a task would do to each node it selects (Drydock's read-only preview)."""
        body = {"action": action, "design_ref": design_ref, "node_filter": node_filter,
                "options": dict(options)}
        result = self._client.request("POST", f"{P}/tasks/preview", ctx=ctx, json_body=body)
        return dict(result or {})
