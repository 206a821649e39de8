"""In-memory Promenade and Drydock for unit tests; they honour idempotency keys like the peers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from common.clients.drydock import (
    FINISHED,
    BudgetBlocker,
    BudgetSlot,
    BudgetSlots,
    Node,
    NodeFilter,
    ResultStatus,
    Task,
    TaskStatus,
)
from common.clients.promenade import DecommissionPreview, NodeView, ReadyStatus
from common.context import RequestContext
from common.errors import BadGateway, Conflict, NotFound
from common.jsontypes import JSON, JSONObject
from common.status import status_body
from shipyard_api.clients.ports import NodeWatch, TaskWatch

BMC_ACTIONS = ("power_off_nodes", "destroy_nodes", "prepare_nodes", "deploy_nodes")


class FakeTask(Task):
    """A task as the fake keeps it: Drydock's task and the nodes its filter named."""

    nodes: list[str]


@dataclass
class Call:
    op: str
    node: str | None
    key: str | None
    marker: str


@dataclass
class FakePromenade:
    """Records calls; each idempotency key's effect happens once (replays get the same answer)."""

    health: bool = True
    fail_decommission: set[str] = field(default_factory=set)
    fenced: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    views: dict[str, NodeView | None] = field(default_factory=dict)  # node views set
    previews: dict[str, DecommissionPreview] = field(default_factory=dict)  # decommission previews
    ready_after: int = 1
    on_decommission: Callable[[str], None] | None = None
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # labels put per node
    unknown: set[str] = field(default_factory=set)  # nodes Kubernetes does not know (404)
    refuse_join: set[str] = field(default_factory=set)  # join-etcd answers 409 for these
    calls: list[Call] = field(default_factory=list)
    effects: list[tuple[str, str]] = field(default_factory=list)
    disrupts: dict[str, dict[str, str]] = field(default_factory=dict)  # decommission's leave
    _answers: dict[str, JSONObject] = field(default_factory=dict)
    _status_reads: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def healthy(self, ctx: RequestContext) -> bool:
        self.calls.append(Call("health", None, None, ctx.marker))
        return self.health

    def _once(self, op: str, node: str, key: str, ctx: RequestContext) -> JSONObject | None:
        with self._lock:
            self.calls.append(Call(op, node, key, ctx.marker))
            return self._answers.get(key)

    def decommission(self, node: str, design_ref: str, timeouts: Mapping[str, int], *,
                     ctx: RequestContext, key: str, fenced: bool = False,
                     disrupt: Mapping[str, str] | None = None) -> JSONObject:
        cached = self._once("decommission", node, key, ctx)
        if cached is not None:
            return cached
        if disrupt:  # the leave to disrupt, and the operator it was passed on for
            self.disrupts[node] = {**disrupt, "end_user": str(ctx.headers().get(
                "X-End-User"))}
        if fenced:
            self.fenced.append(node)
        if self.on_decommission:
            self.on_decommission(node)
        if node in self.fail_decommission:
            raise BadGateway("Promenade: decommission failed", peer_status=status_body(
                500, "Drain failed", reason="DisassociateStepFailure"))
        answer = status_body(200, f"{node} decommissioned", extra={"timeouts": dict(timeouts)})
        with self._lock:
            self.effects.append(("decommission", node))
            self._answers[key] = answer
        return answer

    def cancel_decommission(self, node: str, *, ctx: RequestContext) -> None:
        with self._lock:
            self.calls.append(Call("cancel_decommission", node, None, ctx.marker))
            self.cancelled.append(node)

    def remove_from_cluster(self, node: str, *, ctx: RequestContext,
                            key: str) -> JSONObject:
        cached = self._once("remove_from_cluster", node, key, ctx)
        if cached is not None:
            return cached
        answer = status_body(200, f"{node} removed")
        with self._lock:
            self.effects.append(("remove_from_cluster", node))
            self._answers[key] = answer
        return answer

    def join_etcd(self, node: str, design_ref: str, timeout: int, *, ctx: RequestContext,
                  key: str) -> JSONObject:
        cached = self._once("join_etcd", node, key, ctx)
        if cached is not None:
            return cached
        if node in self.refuse_join:
            raise Conflict("Join etcd refused", reason="JoinEtcdRefused")
        answer = status_body(200, f"The etcd members of {node} are voting members")
        with self._lock:
            self.effects.append(("join_etcd", node))
            self._answers[key] = answer
        return answer

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch:
        """Answers at once, without a version (the caller polls at its interval)."""
        return NodeWatch(self.node_status(node, ctx=ctx), None)

    def node_status(self, node: str, *, ctx: RequestContext) -> NodeView | None:
        """`views[node]` when set; else Ready until removed from the cluster, then Ready
        from the `ready_after`-th read on (the redeployed node joining)."""
        with self._lock:
            self.calls.append(Call("node_status", node, None, ctx.marker))
            if node in self.views:
                view = self.views[node]
                return None if view is None else view.copy()
            reads = 0
            if ("remove_from_cluster", node) in self.effects:
                reads = self._status_reads[node] = self._status_reads.get(node, 0) + 1
        ready: ReadyStatus = "True" if reads == 0 or reads >= self.ready_after else "Unknown"
        return {"name": node, "kubelet": {"ready": ready, "ready_since": None}, "labels": {},
                "annotations": {}, "cordoned": False, "pods": {}, "eviction_locks": [],
                "etcd": []}

    def put_labels(self, node: str, labels: Mapping[str, str], ctx: RequestContext) -> None:
        """The node ends with exactly these labels (404 for a node in `unknown`)."""
        with self._lock:
            self.calls.append(Call("put_labels", node, None, ctx.marker))
            if node in self.unknown:
                raise NotFound(f"Node {node} not found in Kubernetes")
            self.labels[node] = dict(labels)
            self.effects.append(("put_labels", node))

    def count(self, op: str, node: str | None = None) -> int:
        return sum(1 for o, n in self.effects if o == op and (node is None or n == node))

    def decommission_preview(self, node: str, design_ref: str, *, fenced: bool,
                             leaving: list[str], ctx: RequestContext) -> DecommissionPreview:
        """`previews[node]` when set, else a node with nothing in the way."""
        with self._lock:
            self.calls.append(Call("decommission_preview", node, None, ctx.marker))
        preview: DecommissionPreview = {
            "node": node, "fenced": fenced, "kubernetes": {"ready": "True"},
            "phases": [{"phase": p, "runs": True, "note": ""} for p in (
                "fence" if fenced else "drain", "clear-labels", "agent-locks", "remove-etcd",
                "etcd-ready", "shutdown-kubelet")],
            "drain": {"evict": [], "skipped": [], "budgets": [], "eviction_locks": [],
                      "can_finish": True, "blocked_by": []},
            "capacity": {"pending": []}, "etcd": [], "blockers": [], "warnings": []}
        preview.update(self.previews.get(node, {}))
        preview["fenced"] = fenced
        return preview


@dataclass
class FakeDrydock:
    """Tasks finish after `polls_to_finish` reads; (action, node) pairs in `fail` fail."""

    health: bool = True
    polls_to_finish: int = 1
    versions: bool = False  # watch_task answers with versions (Drydock's long-poll)
    fail: set[tuple[str, str]] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    tasks: dict[str, FakeTask] = field(default_factory=dict)
    node_list: list[Node] = field(default_factory=list)
    power: dict[str, str] = field(default_factory=dict)  # node -> on/off (default on)
    bmc_down: set[str] = field(default_factory=set)
    terminated: list[str] = field(default_factory=list)
    wipe_refusals: dict[str, str] = field(default_factory=dict)
    # failure-domain budget: every node in one domain "rack:all" of this budget (None: none)
    budget: int | None = None
    slots: dict[str, str] = field(default_factory=dict)  # holder -> node
    renewals: list[str] = field(default_factory=list)  # holders asked to renew, in order
    _by_key: dict[str, str] = field(default_factory=dict)
    budget_holders: dict[str, str | None] = field(default_factory=dict)  # task -> holder
    _reads: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def healthy(self, ctx: RequestContext) -> bool:
        self.calls.append(Call("health", None, None, ctx.marker))
        return self.health

    def take_budget_slot(self, holder: str, node: str, design_ref: str, *,
                         lease_seconds: float, description: str | None,
                         ctx: RequestContext) -> BudgetSlots:
        with self._lock:
            self.calls.append(Call("take_budget_slot", node, holder, ctx.marker))
            others = {h: n for h, n in self.slots.items() if h != holder}
            if self.budget is not None and len(others) >= self.budget:
                blocker = {"domain": "rack:all", "budget": self.budget, "holders": [
                    {"holder": h, "node": n} for h, n in others.items()],
                    "message": f"failure domain rack:all has its budget of {self.budget} "
                               f"out of service taken by " + ", ".join(others)}
                body = status_body(409, f"{node} cannot go out of service: "
                                   f"{blocker['message']}", reason="BudgetExhausted")
                body["details"]["blockers"] = [blocker]
                raise Conflict(f"Drydock: {body['message']}", reason="BudgetExhausted",
                               details={"peer_status": body}, retry=False)
            if self.budget is None:
                return {"holder": holder, "node": node, "slots": []}
            self.slots[holder] = node
            return {"holder": holder, "node": node,
                    "slots": [{"holder": holder, "node": node, "domain": "rack:all"}]}

    def check_budget_slot(self, holder: str, node: str, design_ref: str, *,
                          ctx: RequestContext) -> list[BudgetBlocker]:
        with self._lock:
            others = {h: n for h, n in self.slots.items() if h != holder}
            if self.budget is None or len(others) < self.budget:
                return []
            return [{"domain": "rack:all", "budget": self.budget,
                     "holders": [{"holder": h, "node": n} for h, n in others.items()],
                     "message": f"failure domain rack:all has its budget of {self.budget} out "
                                f"of service taken by " + ", ".join(others)}]

    def renew_budget_slot(self, holder: str, *, lease_seconds: float,
                          ctx: RequestContext) -> BudgetSlots:
        with self._lock:
            self.renewals.append(holder)
            if holder not in self.slots:
                raise NotFound(f"{holder} holds no slot", reason="SlotsNotHeld")
            return {"holder": holder, "slots": []}

    def release_budget_slot(self, holder: str, *, ctx: RequestContext) -> None:
        with self._lock:
            self.calls.append(Call("release_budget_slot", self.slots.get(holder), holder,
                                   ctx.marker))
            self.slots.pop(holder, None)

    def budget_slots(self, *, ctx: RequestContext,
                     holder: str | None = None) -> list[BudgetSlot]:
        with self._lock:
            return [{"holder": h, "node": n} for h, n in self.slots.items()
                    if holder in (None, h)]

    def create_task(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                    options: Mapping[str, JSON], *, ctx: RequestContext,
                    key: str, budget_holder: str | None = None) -> Task:
        nodes = _filter_nodes(node_filter)
        with self._lock:
            self.calls.append(Call(f"create:{action}", ",".join(nodes), key, ctx.marker))
            if key in self._by_key:
                return self.tasks[self._by_key[key]].copy()
            task_id = f"task-{len(self.tasks) + 1}"
            self.tasks[task_id] = {"kind": "Task", "task_id": task_id, "action": action,
                                   "subtask_id_list": [],
                                   "status": TaskStatus.QUEUED.value, "design_ref": design_ref,
                                   "node_filter": node_filter,
                                   "options": dict(options), "nodes": nodes,
                                   "result": {"status": ResultStatus.INCOMPLETE.value}}
            self._by_key[key] = task_id
            self.budget_holders[task_id] = budget_holder
            return self.tasks[task_id].copy()

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        """Answers at once (a fake task changes only as it is read): a version counting the
        reads with `versions`, else none (the caller polls at its interval)."""
        task = self.get_task(task_id, ctx=ctx)
        version = str(self._reads.get(task_id, 0)) if self.versions else None
        return TaskWatch(task, version)

    def get_task(self, task_id: str, *, ctx: RequestContext) -> Task:
        with self._lock:
            self.calls.append(Call("get_task", None, None, ctx.marker))
            task = self.tasks.get(task_id)
            if task is None:
                raise NotFound(f"No task {task_id}")
            self._reads[task_id] = self._reads.get(task_id, 0) + 1
            if task["action"] == "power_off_nodes":
                for n in task["nodes"]:
                    if n not in self.bmc_down:
                        self.power[n] = "off"
            if (self._reads[task_id] >= self.polls_to_finish
                    and task["status"] not in FINISHED):
                failures = [n for n in task["nodes"] if (task["action"], n) in self.fail
                            or (n in self.bmc_down and task["action"] in BMC_ACTIONS)]
                task["status"] = TaskStatus.COMPLETE.value
                result = ResultStatus.FAILURE if failures else ResultStatus.SUCCESS
                task["result"] = {"status": result.value,
                                  "failures": failures,
                                  "successes": [n for n in task["nodes"] if n not in failures]}
            return task.copy()

    def terminate_task(self, task_id: str, *, ctx: RequestContext) -> None:
        with self._lock:
            self.calls.append(Call("terminate", None, task_id, ctx.marker))
            self.terminated.append(task_id)
            task = self.tasks.get(task_id)
            if task is not None and task["status"] != TaskStatus.COMPLETE.value:
                task["status"] = TaskStatus.TERMINATED.value

    def node(self, name: str, design_ref: str, *, ctx: RequestContext) -> Node:
        with self._lock:
            self.calls.append(Call("node", name, design_ref, ctx.marker))
            labels = next((dict(n.get("labels") or {}) for n in self.node_list
                           if n.get("hostname") == name), {})
            if name in self.bmc_down:
                return {"name": name, "power_state": None, "oob_address": f"bmc-{name}",
                        "power_error": f"BMC bmc-{name} did not answer (3 tries)",
                        "maas_status": "Deployed", "labels": labels}
            return {"name": name, "power_state": self.power.get(name, "on"),
                    "power_error": None, "oob_address": f"bmc-{name}",
                    "maas_status": "Deployed", "labels": labels}

    def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict[str, object]:
        with self._lock:
            self.calls.append(Call("task_tree", None, None, ctx.marker))
            if task_id not in self.tasks:
                raise NotFound(f"No task {task_id}")
            return {"init_task_id": task_id, task_id: dict(self.tasks[task_id])}

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[Node]:
        self.calls.append(Call("nodes", None, design_ref, ctx.marker))
        return [n.copy() for n in self.node_list
                if retired is None or bool(n.get("retired")) == retired]

    def wipe_plan(self, design_ref: str, nodes: list[str], options: Mapping[str, JSON], *,
                  ctx: RequestContext) -> list[JSONObject]:
        self.calls.append(Call("wipeplan", ",".join(nodes), design_ref, ctx.marker))
        return [{"node": n, "refusal": self.wipe_refusals.get(n), "disks": [],
                 "maas_erase": None} for n in nodes]

    def task_preview(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                     options: Mapping[str, JSON], *, ctx: RequestContext) -> JSONObject:
        """Per node: BMC as `node()` reports it, the wipe refusal, retirement."""
        self.calls.append(Call(f"preview:{action}", None, design_ref, ctx.marker))
        retired = {str(n.get("hostname")) for n in self.node_list if n.get("retired")}
        names = _filter_nodes(node_filter) or [str(n.get("hostname")) for n in self.node_list]
        nodes: list[JSON] = []
        skipped: list[JSON] = []
        every: list[JSON] = []
        for name in names:
            if name in retired and action in ("prepare_nodes", "deploy_nodes"):
                skipped.append({"node": name, "reason": f"retired: left out by {action}"})
                continue
            view = self.node(name, design_ref, ctx=ctx)
            blockers: list[JSON] = [f"{name}: {view['power_error']}"] \
                if view["power_state"] is None else []
            refusal = self.wipe_refusals.get(name) if action == "destroy_nodes" else None
            blockers += [refusal] if refusal else []
            nodes.append({
                "node": name, "steps": [action], "maas_status": view["maas_status"],
                "retired": name in retired, "blockers": blockers, "warnings": [],
                "bmc": {"reachable": view["power_state"] is not None,
                        "power_state": view["power_state"], "error": view["power_error"],
                        "address": view["oob_address"]},
                "wipe": {"refusal": refusal, "disks": [], "maas_erase": None}
                if action == "destroy_nodes" else None})
            every += blockers
        return {"action": action, "options": dict(options), "nodes": nodes, "skipped": skipped,
                "blockers": every, "warnings": []}

    def select_nodes(self, design_ref: str, node_filter: NodeFilter | None, *,
                     ctx: RequestContext) -> list[str]:
        self.calls.append(Call("nodefilter", None, design_ref, ctx.marker))
        named = _filter_nodes(node_filter)  # only node_names filters are understood here
        return named or [str(n.get("hostname")) for n in self.node_list]

    def created(self, action: str, node: str | None = None) -> int:
        """How many distinct tasks of `action` (for `node`) were created."""
        return sum(1 for t in self.tasks.values()
                   if t["action"] == action and (node is None or node in t["nodes"]))


def _filter_nodes(node_filter: NodeFilter | None) -> list[str]:
    if not node_filter:
        return []
    names: list[str] = []
    for item in node_filter.get("filter_set") or []:
        names += list(item.get("node_names") or [])
    return names
