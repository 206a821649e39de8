"""Drydock's wire types (schemas/openapi/drydock.yaml) and its one HTTP client."""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeGuard, get_args

from common.api import API_PREFIX as P
from common.clients.generated.drydock import (
    BudgetBlocker,
    BudgetSlot,
    BudgetSlots,
    FilterItem,
    MessageDetails,
    Node,
    NodeFilter,
    Task,
    TaskOptions,
    TaskResult,
)
from common.clients.generated.drydock import ResultStatus as ResultStatusName
from common.clients.generated.drydock import TaskStatus as TaskStatusName
from common.context import RequestContext
from common.httpclient import ServiceClient
from common.jsontypes import JSONObject
from common.urlpath import node_path

VERSION_HEADER = "X-Task-Version"
WAITED_HEADER = "X-Long-Poll"
READ_MARGIN = 30.0  # seconds beyond a long-poll's wait before the read times out
__all__ = ["FINISHED", "BudgetBlocker", "BudgetSlot", "BudgetSlots", "DrydockClient",
           "FilterItem", "MessageDetails", "Node", "NodeFilter",
           "ResultStatus", "Task", "TaskOptions", "TaskResult", "TaskStatus", "TaskWatch",
           "node_names_filter", "result_status", "task_status"]


class TaskStatus(StrEnum):
    """A task's `status`."""

    REQUESTED = "requested"
    QUEUED = "queued"
    RUNNING = "running"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    COMPLETE = "complete"


class ResultStatus(StrEnum):
    """A task's `result.status`."""

    INCOMPLETE = "incomplete"
    SUCCESS = "success"
    PARTIAL_SUCCESS = "partial_success"
    FAILURE = "failure"


FINISHED = frozenset({TaskStatus.COMPLETE, TaskStatus.TERMINATED})  # a task that ended


def _is_task_status(value: str) -> TypeGuard[TaskStatusName]:
    return value in get_args(TaskStatusName)


def _is_result_status(value: str) -> TypeGuard[ResultStatusName]:
    return value in get_args(ResultStatusName)


def task_status(value: str) -> TaskStatusName:
    """`value` as the wire's task status (ValueError: not one the document lists)."""
    if _is_task_status(value):
        return value
    raise ValueError(f"not a task status: {value!r}")


def result_status(value: str) -> ResultStatusName:
    """`value` as the wire's result status (ValueError: not one the document lists)."""
    if _is_result_status(value):
        return value
    raise ValueError(f"not a result status: {value!r}")


def node_names_filter(nodes: list[str]) -> NodeFilter:
    """A node filter selecting exactly `nodes`."""
    return {"filter_set_type": "union",
            "filter_set": [{"filter_type": "union", "node_names": list(nodes)}]}


@dataclass(frozen=True)
class TaskWatch:
    """A task as a long-poll answered it; `version` is None when Drydock keeps no versions,
    `busy` when too many long-polls waited there already (either way: poll at an interval)."""

    task: Task
    version: str | None
    busy: bool = False


class DrydockClient:
    """Drydock over a ServiceClient (marker and idempotency keys forwarded)."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def healthy(self, ctx: RequestContext) -> bool:
        return self._client.raw("GET", f"{P}/health", ctx=ctx, read_timeout=10.0).status_code \
            == 204

    def create_task(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                    options: Mapping[str, object], *, ctx: RequestContext, key: str,
                    budget_holder: str | None = None) -> Task:
        """`budget_holder`: the task acts under the failure-domain slots that holder has."""
        body = {"action": action, "design_ref": design_ref, "node_filter": node_filter,
                "options": dict(options)}
        if budget_holder is not None:
            body["budget_holder"] = budget_holder
        result: Task = self._client.request("POST", f"{P}/tasks", ctx=ctx, json_body=body,
                                            idempotency_key=key)
        return result

    def get_task(self, task_id: str, *, ctx: RequestContext) -> Task:
        """The task itself with its subtasks' errors (cheap enough to poll)."""
        result: Task = self._client.request("GET", f"{P}/tasks/{task_id}", ctx=ctx,
                                            params={"subtaskerrors": "true"})
        return result

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        """The task once its version differs from `since` (Drydock's long-poll), or after
        `wait` seconds unchanged; at once without `since`. Without its subtasks' errors
        (`get_task` has them): Drydock reads every subtask's messages for those, which took
        most of each answer's time."""
        params: dict[str, str] = {}
        if since is not None and wait > 0:
            params.update(since=since, wait=f"{wait:g}")
        response = self._client.raw("GET", f"{P}/tasks/{task_id}", ctx=ctx,
                                    params=params or None, read_timeout=wait + READ_MARGIN)
        if response.status_code >= 400:
            raise self._client.error(response)
        return TaskWatch(response.json(), response.headers.get(VERSION_HEADER),
                         busy=response.headers.get(WAITED_HEADER) == "busy")

    def terminate_task(self, task_id: str, *, ctx: RequestContext) -> None:
        self._client.request("POST", f"{P}/tasks/{task_id}/terminate", ctx=ctx)

    def node(self, name: str, design_ref: str, *, ctx: RequestContext) -> Node:
        """One node as Drydock sees it now: BMC power state (or why unknown), MAAS status."""
        result: Node = self._client.request("GET", node_path(f"{P}/nodes", name), ctx=ctx,
                                            params={"design_ref": design_ref})
        return result

    def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict[str, object]:
        """Every task of the tree by id, plus `init_task_id` (Drydock's layers=-1 view)."""
        result = self._client.request("GET", f"{P}/tasks/{task_id}", ctx=ctx,
                                      params={"subtaskerrors": "true", "layers": "-1"})
        return dict(result or {})

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[Node]:
        """Drydock's view of every node (or only the (un)retired ones, whose BMCs alone are
        asked): MAAS status, power state, retirement."""
        params = {"design_ref": design_ref} if design_ref else {}
        if retired is not None:
            params["retired"] = "true" if retired else "false"
        result: list[Node] = self._client.request("GET", f"{P}/nodes", ctx=ctx,
                                                  params=params or None) or []
        return result

    def wipe_plan(self, design_ref: str, nodes: list[str], options: Mapping[str, object], *,
                  ctx: RequestContext) -> list[JSONObject]:
        """How destroy_nodes would keep or wipe each disk of `nodes`, or why it refuses one
        (Drydock's POST /wipeplan; nothing is touched)."""
        result = self._client.request("POST", f"{P}/wipeplan", ctx=ctx, json_body={
            "design_ref": design_ref, "node_names": list(nodes), "options": dict(options)})
        return [dict(n) for n in result or []]

    def select_nodes(self, design_ref: str, node_filter: NodeFilter | None, *,
                     ctx: RequestContext) -> list[str]:
        """Names of the design's nodes a node filter selects (Drydock's POST /nodefilter)."""
        result = self._client.request("POST", f"{P}/nodefilter", ctx=ctx, json_body={
            "design_ref": design_ref, "node_filter": node_filter})
        return [str(n) for n in result or []]

    def task_preview(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                     options: Mapping[str, object], *, ctx: RequestContext) -> JSONObject:
        """What a task would do to each node it selects (Drydock's read-only preview)."""
        body = {"action": action, "design_ref": design_ref, "node_filter": node_filter,
                "options": dict(options)}
        result = self._client.request("POST", f"{P}/tasks/preview", ctx=ctx, json_body=body)
        return dict(result or {})

    # -- failure-domain budget slots (Drydock holds them; see POST /budgets/slots) ---------
    def take_budget_slot(self, holder: str, node: str, design_ref: str, *,
                         lease_seconds: float, description: str | None,
                         ctx: RequestContext) -> BudgetSlots:
        """Hold a slot of every failure domain of `node` (renews what `holder` holds);
        Conflict (409 BudgetExhausted) naming each full domain and its holders."""
        body: dict[str, str | float] = {"holder": holder, "node": node, "design_ref": design_ref,
                                        "lease_seconds": lease_seconds}
        if description:
            body["description"] = description
        result: BudgetSlots | None = self._client.request("POST", f"{P}/budgets/slots",
                                                          ctx=ctx, json_body=body)
        return result or {}

    def check_budget_slot(self, holder: str, node: str, design_ref: str, *,
                          ctx: RequestContext) -> list[BudgetBlocker]:
        """The blockers taking the node's slots would meet now (nothing is taken)."""
        body = {"holder": holder, "node": node, "design_ref": design_ref, "dry_run": True}
        result: BudgetSlots | None = self._client.request("POST", f"{P}/budgets/slots",
                                                          ctx=ctx, json_body=body)
        return list(result.get("blockers") or []) if result else []

    def renew_budget_slot(self, holder: str, *, lease_seconds: float,
                          ctx: RequestContext) -> BudgetSlots:
        """Extend `holder`'s slots; NotFound (SlotsNotHeld) once its lease ran out."""
        result: BudgetSlots | None = self._client.request(
            "PUT", f"{P}/budgets/slots/{holder}", ctx=ctx,
            json_body={"lease_seconds": lease_seconds})
        return result or {}

    def release_budget_slot(self, holder: str, *, ctx: RequestContext) -> None:
        self._client.request("DELETE", f"{P}/budgets/slots/{holder}", ctx=ctx)

    def budget_slots(self, *, ctx: RequestContext,
                     holder: str | None = None) -> list[BudgetSlot]:
        result: BudgetSlots | None = self._client.request(
            "GET", f"{P}/budgets/slots", ctx=ctx,
            params={"holder": holder} if holder else None)
        return list(result.get("slots") or []) if result else []

