"""What a task would do to each node it selects, as things are now; nothing is touched.

For a task request (the body of POST /tasks) the preview answers per selected node: the
steps the task would run, the BMC (reachable, power state), MAAS status, retirement, a task
already holding the node, and for destroy_nodes how each disk would be kept or wiped (the
wipe plan). Blockers are what would make the task fail or be refused for the node; warnings
what it would survive.
"""

from __future__ import annotations

from collections.abc import Callable

from common.clients.generated.drydock import Node
from common.context import RequestContext
from common.designref import href_of
from common.jsontypes import JSON, JSONObject
from drydock_api.db.nodes import NodeStore
from drydock_api.drivers.ports import EraseInterface
from drydock_api.nodes.design import Design
from drydock_api.nodes.filters import select_nodes
from drydock_api.nodes.inventory import Inventory
from drydock_api.tasks import wipe
from drydock_api.tasks.actions import ActionDef
from drydock_api.tasks.service import TaskService

BMC_ACTIONS = ("power_off_nodes", "destroy_nodes", "prepare_nodes", "deploy_nodes")


def _findings(action: ActionDef, view: Node, busy: str | None,
              wipe_plan: JSONObject | None) -> tuple[list[str], list[str]]:
    name = view["hostname"]
    blockers, warnings = [], []
    if action.name in BMC_ACTIONS and view.get("power_state") is None:
        blockers.append(f"{name}: its BMC {view.get('oob_address') or ''} did not report a "
                        f"power state ({view.get('power_error') or 'unknown'})".replace("  ", " "))
    if busy:
        blockers.append(f"{name} is held by running task {busy}")
    if wipe_plan and wipe_plan.get("refusal"):
        blockers.append(str(wipe_plan["refusal"]))
    if view.get("maas_error"):
        warnings.append(f"MAAS could not be read: {view['maas_error']}")
    elif view.get("maas_status") is None and action.name != "destroy_nodes":
        warnings.append(f"{name} is not known to MAAS (it is enlisted first)")
    return blockers, warnings


def _machine(view: Node) -> Callable[[], wipe.MaasView] | None:
    """The node's machine as the inventory read it from MAAS (None: MAAS could not be read)."""
    if view.get("maas_error"):
        return None
    return lambda: wipe.MaasView(view.get("maas_status"))


class TaskPreview:
    def __init__(self, service: TaskService, designs: Callable[[JSON, RequestContext], Design],
                 inventory: Inventory, nodes: NodeStore, erase: EraseInterface) -> None:
        self._service, self._designs = service, designs
        self._inventory, self._nodes, self._erase = inventory, nodes, erase

    def preview(self, body: JSONObject, ctx: RequestContext) -> JSONObject:
        """400 for a request POST /tasks would refuse; else the per-node preview."""
        action, options = self._service.check_body(body)
        href_of(body["design_ref"])
        if action.site is not None:  # a site-level task: no node is touched
            return {"action": action.name, "options": options, "nodes": [], "skipped": [],
                    "blockers": [], "warnings": [], "site": True}
        nodes: list[JSON] = []
        skipped: list[JSON] = []
        blocking: list[JSON] = []
        warned: list[JSON] = []
        out: JSONObject = {"action": action.name, "options": options, "nodes": nodes,
                           "skipped": skipped, "blockers": blocking, "warnings": warned}
        design = self._designs(body["design_ref"], ctx)
        names = select_nodes(body.get("node_filter"), design.nodes, design.rack_labels)
        views = {v["hostname"]: v for v in self._inventory.nodes(ctx, body["design_ref"], names)}
        steps = [s.name for s in action.steps(options)] if action.steps else []
        for name in names:
            view = views[name]
            if action.skip_retired and view["retired"]:
                skipped.append({"node": name, "reason": "retired: left out by "
                                       f"{action.name}"})
                continue
            plan = (wipe.plan_for(design.nodes[name], options, self._erase, _machine(view))
                    if action.name == "destroy_nodes" else None)
            blockers, warnings = _findings(action, view, self._nodes.busy(name), plan)
            nodes.append({
                "node": name, "steps": [*steps],
                "bmc": {"type": view.get("oob_type"), "address": view.get("oob_address"),
                        "reachable": view.get("power_state") is not None,
                        "power_state": view.get("power_state"),
                        "error": view.get("power_error")},
                "maas_status": view.get("maas_status"), "retired": view["retired"],
                "retired_reason": view.get("retired_reason"),
                "torn_down": view.get("torn_down", False),
                "wipe": plan, "blockers": [*blockers], "warnings": [*warnings]})
            blocking += blockers
            warned += [f"{name}: {w}" for w in warnings]
        return out
