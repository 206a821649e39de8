"""A fake Drydock that also resolves node filters (with Drydock's own selection code), knows
retired nodes, and can fail or hang prepare_nodes / deploy_nodes per node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.context import RequestContext
from common.errors import ServiceUnavailable
from drydock_api.nodes.design import NodeDef
from drydock_api.nodes.filters import select_nodes
from shipyard_api.clients.fakes import FakeDrydock
from shipyard_api.strategy.selectors import NodeInfo


@dataclass
class StrategyDrydock(FakeDrydock):
    site: list[NodeInfo] = field(default_factory=list)
    retired: set[str] = field(default_factory=set)
    hang: set[tuple[str, str]] = field(default_factory=set)
    filters_resolved: int = 0
    listings: int = 0

    def select_nodes(self, design_ref: str, node_filter: dict[str, Any] | None, *,
                     ctx: RequestContext) -> list[str]:
        self.filters_resolved += 1
        defs = {n.name: NodeDef(n.name, n.rack, n.tags, dict(n.labels), None, None, None, None,
                                (), None) for n in self.site}
        return select_nodes(node_filter, defs)

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[dict[str, Any]]:
        self.listings += 1
        return [{"hostname": n.name, "rack": n.rack, "tags": list(n.tags),
                 "labels": dict(n.labels), "retired": n.name in self.retired}
                for n in self.site if retired is None or (n.name in self.retired) == retired]

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        if task and any((task["action"], n) in self.hang for n in task["nodes"]):
            return {**task, "status": "running"}
        return super().get_task(task_id, ctx=ctx)

    def sent(self, action: str) -> list[str]:
        """Every node sent to `action`, once per task it was in."""
        return [n for t in self.tasks.values() if t["action"] == action for n in t["nodes"]]


class Crash(BaseException):
    """A worker dying in the middle of a step (not an error the engine could catch)."""


@dataclass
class CrashingStrategyDrydock(StrategyDrydock):
    """Dies once right after Drydock created the task for `crash_on` (action, first node)."""

    crash_on: tuple[str, str] = ("deploy_nodes", "control01")
    crashed: bool = False

    def create_task(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                    options: Any, *, ctx: RequestContext, key: str) -> dict[str, Any]:
        task = super().create_task(action, design_ref, node_filter, options, ctx=ctx, key=key)
        if not self.crashed and (action, task["nodes"][0]) == self.crash_on:
            self.crashed = True
            raise Crash()
        return task


@dataclass
class RefusingStrategyDrydock(StrategyDrydock):
    """Answers task creation for `refuse` actions with `error` (once when `once`)."""

    refuse: str = "deploy_nodes"
    error: Exception | None = None
    once: bool = False
    refused: int = 0

    def create_task(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                    options: Any, *, ctx: RequestContext, key: str) -> dict[str, Any]:
        if action == self.refuse and self.error is not None and not (self.once and
                                                                     self.refused):
            self.refused += 1
            raise self.error
        return super().create_task(action, design_ref, node_filter, options, ctx=ctx, key=key)


@dataclass
class UnreadableStrategyDrydock(StrategyDrydock):
    """Answers the first `unreadable` task reads with 503 (Drydock restarting)."""

    unreadable: int = 3

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        if self.unreadable:
            self.unreadable -= 1
            raise ServiceUnavailable("Drydock is restarting")
        return super().get_task(task_id, ctx=ctx)
