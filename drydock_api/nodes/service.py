"""Node operations of the API: retirement (spec 003), provide, reboot requests (spec 004)."""

from __future__ import annotations

from datetime import UTC, datetime

from common.bodyschema import require_schema
from common.clients.generated.drydock import Node
from common.context import RequestContext
from common.errors import Conflict, NotFound
from common.jsontypes import JSON, JSONObject, as_float, as_str
from drydock_api.db.models import RebootRow
from drydock_api.db.nodes import NodeStore
from drydock_api.drivers.provisioners import Backends
from drydock_api.nodes import power
from drydock_api.nodes.inventory import Inventory
from drydock_api.nodes.reboot import policy_of

AVAILABLE = ("Ready", "Allocated")
MODES = ("soft", "hard")


class NodeRetired(Conflict):
    reason, title = "NodeRetired", "The node is retired"


class NodeBusy(Conflict):
    reason, title = "NodeBusy", "A task holds the node"


class InvalidNodeState(Conflict):
    reason, title = "InvalidNodeState", "Not allowed in the node's current state"


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()


def retirement_rules(body: JSONObject) -> list[str]:
    """What RetirementRequest's schema cannot say: a reason goes with retired: true."""
    if "retired_reason" in body and body.get("retired") is not True:
        return ["retired_reason is only allowed with retired: true"]
    return []


def reboot_rules(body: JSONObject) -> list[str]:
    """What RebootRequest's schema cannot say: mode and power_policy agree; no grace period
    for a hard power-off."""
    policy, mode = body.get("power_policy"), body.get("mode")
    problems = []
    if mode in MODES and policy in power.POLICIES and (mode == "hard") != (policy == power.HARD):
        problems.append(f"mode {mode} contradicts power_policy {policy}: give one")
    if "grace_period" in body and policy == power.HARD:
        problems.append("grace_period is not used with power_policy hard (no graceful "
                        "shutdown is asked)")
    return problems


class NodeService:
    """Domain side of PATCH /nodes/{name}, provide and reboot requests."""

    def __init__(self, inventory: Inventory, nodes: NodeStore,
                 backends: Backends | None = None) -> None:
        self._inventory = inventory
        self._nodes = nodes
        self._backends = backends  # a provisioner keeping its own retired flag (Ironic)

    def _view(self, ctx: RequestContext, name: str, design_ref: JSON) -> Node:
        return self._inventory.node(ctx, name, design_ref)

    def retire(self, ctx: RequestContext, name: str, body: JSONObject,
               design_ref: JSON) -> Node:
        require_schema("drydock", "RetirementRequest", body, "Invalid retirement request",
                       extra=retirement_rules(body))
        view = self._view(ctx, name, design_ref)
        busy = self._nodes.busy(name) if body["retired"] else None
        if busy:
            raise NodeBusy(f"Node {name} is held by task {busy}: retire it once the task has "
                           "ended (or retire it as part of destroy_nodes: retire: true)")
        record = self._nodes.get(name)
        torn_down = bool(record and record.torn_down)
        if body["retired"] and view["maas_status"] in AVAILABLE and not torn_down:
            raise InvalidNodeState(
                f"Node {name} is available for deployment (MAAS {view['maas_status']}): "
                f"tear it down (destroy_nodes) before retiring it")
        self._retire_at_provisioner(view, name, body)
        self._nodes.update(name, retired=body["retired"],
                           retired_reason=body.get("retired_reason") if body["retired"]
                           else None)
        return self._view(ctx, name, design_ref)

    def _retire_at_provisioner(self, view: Node, name: str, body: JSONObject) -> None:
        """Ironic keeps its own retired flag (spec 003): set there first, so a refusal
        (Ironic's 409 for an available node) leaves Drydock's record as it was."""
        if self._backends is None or not view.get("provisioner") \
                or view.get("maas_system_id") is None:
            return
        retirement = self._backends.get(view["provisioner"]).retirement
        if retirement is None:
            return
        if body["retired"]:
            retirement.retire(name, as_str(body.get("retired_reason")))
        else:
            retirement.unretire(name)

    def provide(self, ctx: RequestContext, name: str, design_ref: JSON) -> Node:
        self._view(ctx, name, design_ref)
        record = self._nodes.get(name)
        if record is not None and record.retired:
            raise NodeRetired(f"Node {name} is retired; unretire it (PATCH retired: false) "
                              f"before providing it")
        if record is None or not record.torn_down:
            raise InvalidNodeState(f"Node {name} is not torn down: nothing to provide")
        self._nodes.update(name, torn_down=False)
        return self._view(ctx, name, design_ref)

    def add_reboot(self, ctx: RequestContext, name: str, body: JSONObject,
                   design_ref: JSON) -> tuple[JSONObject, bool]:
        require_schema("drydock", "RebootRequest", body, "Invalid reboot request",
                       extra=reboot_rules(body))
        self._inventory.require(ctx, name, design_ref)
        record = self._nodes.get(name)
        if record is not None and record.retired:
            raise NodeRetired(f"Node {name} is retired: a retired node is not rebooted "
                              "(unretire it first)")
        if record is not None and record.torn_down:
            raise InvalidNodeState(f"Node {name} is torn down: there is nothing to reboot")
        key = str(body.get("key") or "")
        existed = any(r.key == key for r in self._nodes.reboots(name))
        policy = as_str(body.get("power_policy"))
        mode = "hard" if policy == power.HARD else str(body.get("mode", "soft"))
        self._nodes.add_reboot(name, key, mode, body.get("value"),
                               ctx.end_user or ctx.user, design_ref)
        grace = body.get("grace_period")
        self._nodes.set_reboot_policy(name, key, policy, None if grace is None
                                      else as_float(grace, 0.0))
        return self.reboots(ctx, name, design_ref, check=False), not existed

    def reboots(self, ctx: RequestContext, name: str, design_ref: JSON,
                check: bool = True) -> JSONObject:
        if check:
            self._inventory.require(ctx, name, design_ref)
        record, requests = self._nodes.reboot_state(name)
        return {
            "node": name,
            "requests": [_request(r) for r in requests],
            "power_state": record.power_state if record else None,
            "pending_reboot_since": iso(record.pending_reboot_since) if record else None,
            "last_powered_on": iso(record.last_powered_on) if record else None,
            "reboot_error": record.reboot_error if record else None,
            "last_power_off": record.last_power_off if record else None,
        }

    def delete_reboot(self, ctx: RequestContext, name: str, key: str, design_ref: JSON) -> None:
        self._inventory.require(ctx, name, design_ref)
        if not self._nodes.delete_reboot(name, key):
            raise NotFound(f"Node {name} has no reboot request with key {key!r}",
                           reason="RebootRequestNotFound")


def _request(row: RebootRow) -> JSON:
    return {"key": row.key or None, "mode": row.mode, "value": row.value,
            "created": iso(row.created), "created_by": row.created_by,
            "power_policy": policy_of(row), "grace_period": row.grace_period,
            "power": row.power}
