"""The small interfaces the workflow steps use to reach Promenade and Drydock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from common.clients.drydock import (
    BudgetBlocker,
    BudgetSlot,
    BudgetSlots,
    Node,
    NodeFilter,
    Task,
    TaskWatch,
    node_names_filter,
)
from common.clients.promenade import DecommissionPreview, NodeView, NodeWatch, node_ready
from common.context import RequestContext
from common.jsontypes import JSON, JSONObject

__all__ = ["DrydockPort", "NodeWatch", "PromenadePort", "TaskWatch", "node_names_filter",
           "node_ready"]


class PromenadePort(Protocol):
    def healthy(self, ctx: RequestContext) -> bool: ...

    def decommission(self, node: str, design_ref: str, timeouts: Mapping[str, int], *,
                     ctx: RequestContext, key: str, fenced: bool = False,
                     disrupt: Mapping[str, str] | None = None) -> JSONObject: ...

    def cancel_decommission(self, node: str, *, ctx: RequestContext) -> None: ...

    def remove_from_cluster(self, node: str, *, ctx: RequestContext,
                            key: str) -> JSONObject: ...

    def node_status(self, node: str, *, ctx: RequestContext) -> NodeView | None: ...

    def decommission_preview(self, node: str, design_ref: str, *, fenced: bool,
                             leaving: list[str], ctx: RequestContext) -> DecommissionPreview: ...

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch: ...

    def put_labels(self, node: str, labels: Mapping[str, str], ctx: RequestContext) -> None: ...

    def join_etcd(self, node: str, design_ref: str, timeout: int, *, ctx: RequestContext,
                  key: str) -> JSONObject: ...


class DrydockPort(Protocol):
    def healthy(self, ctx: RequestContext) -> bool: ...

    def create_task(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                    options: Mapping[str, JSON], *, ctx: RequestContext,
                    key: str, budget_holder: str | None = None) -> Task: ...

    def get_task(self, task_id: str, *, ctx: RequestContext) -> Task: ...

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch: ...

    def terminate_task(self, task_id: str, *, ctx: RequestContext) -> None: ...

    def node(self, name: str, design_ref: str, *, ctx: RequestContext) -> Node: ...

    def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict[str, object]: ...

    def select_nodes(self, design_ref: str, node_filter: NodeFilter | None, *,
                     ctx: RequestContext) -> list[str]: ...

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[Node]: ...

    def wipe_plan(self, design_ref: str, nodes: list[str], options: Mapping[str, JSON], *,
                  ctx: RequestContext) -> list[JSONObject]: ...

    def task_preview(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                     options: Mapping[str, JSON], *, ctx: RequestContext) -> JSONObject: ...

    def take_budget_slot(self, holder: str, node: str, design_ref: str, *,
                         lease_seconds: float, description: str | None,
                         ctx: RequestContext) -> BudgetSlots: ...

    def check_budget_slot(self, holder: str, node: str, design_ref: str, *,
                          ctx: RequestContext) -> list[BudgetBlocker]: ...

    def renew_budget_slot(self, holder: str, *, lease_seconds: float,
                          ctx: RequestContext) -> BudgetSlots: ...

    def release_budget_slot(self, holder: str, *, ctx: RequestContext) -> None: ...

    def budget_slots(self, *, ctx: RequestContext,
                     holder: str | None = None) -> list[BudgetSlot]: ...
