"""The small interfaces the workflow steps use to reach Promenade and Drydock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from common.context import RequestContext


class PromenadePort(Protocol):
    def healthy(self, ctx: RequestContext) -> bool: ...

    def decommission(self, node: str, design_ref: str, timeouts: Mapping[str, int], *,
                     ctx: RequestContext, key: str, fenced: bool = False) -> dict[str, Any]: ...

    def cancel_decommission(self, node: str, *, ctx: RequestContext) -> None: ...

    def remove_from_cluster(self, node: str, *, ctx: RequestContext,
                            key: str) -> dict[str, Any]: ...

    def node_status(self, node: str, *, ctx: RequestContext) -> dict[str, Any] | None: ...

    def decommission_preview(self, node: str, design_ref: str, *, fenced: bool,
                             leaving: list[str], ctx: RequestContext) -> dict[str, Any]: ...

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch: ...


@dataclass(frozen=True)
class TaskWatch:
    """A task as a long-poll answered it; `version` is None when Drydock keeps no versions,
    `busy` when too many long-polls waited there already (either way: poll at an interval)."""

    task: dict[str, Any]
    version: str | None
    busy: bool = False


@dataclass(frozen=True)
class NodeWatch:
    """Promenade's node view as a long-poll answered it (None: not known to Kubernetes);
    `version` None or `busy`: poll at an interval instead."""

    status: dict[str, Any] | None
    version: str | None
    busy: bool = False


class DrydockPort(Protocol):
    def healthy(self, ctx: RequestContext) -> bool: ...

    def create_task(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                    options: Mapping[str, Any], *, ctx: RequestContext,
                    key: str) -> dict[str, Any]: ...

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]: ...

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch: ...

    def terminate_task(self, task_id: str, *, ctx: RequestContext) -> None: ...

    def node(self, name: str, design_ref: str, *, ctx: RequestContext) -> dict[str, Any]: ...

    def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]: ...

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[dict[str, Any]]: ...

    def wipe_plan(self, design_ref: str, nodes: list[str], options: Mapping[str, Any], *,
                  ctx: RequestContext) -> list[dict[str, Any]]: ...

    def task_preview(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                     options: Mapping[str, Any], *, ctx: RequestContext) -> dict[str, Any]: ...


def node_names_filter(nodes: list[str]) -> dict[str, Any]:
    """A Drydock node filter selecting exactly `nodes`."""
    return {"filter_set_type": "union",
            "filter_set": [{"filter_type": "union", "node_names": list(nodes)}]}


def _truth(value: Any) -> bool | None:
    """A readiness flag given as a boolean or as a condition status ("True"/"False")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "unknown"):
        return value.lower() == "true"
    return None


def node_ready(status: Mapping[str, Any] | None) -> bool:
    """Whether Promenade's view of a Kubernetes node says it is Ready."""
    if not status:
        return False
    flags = [status.get("ready")]
    for key in ("kubelet", "kubernetes"):
        inner_view = status.get(key)
        if isinstance(inner_view, Mapping):
            flags.append(inner_view.get("ready"))
    for flag in flags:
        if _truth(flag) is not None:
            return bool(_truth(flag))
    inner = status.get("status")
    conditions = inner.get("conditions") if isinstance(inner, Mapping) else None
    for cond in conditions or status.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return str(cond.get("status")) == "True"
    return False
