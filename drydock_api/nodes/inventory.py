"""GET /nodes: the design's nodes merged with MAAS state, BMC power state and node records.

Power states: up to `live_power_limit` nodes are asked of their BMCs (in parallel); a longer
list reports the power state MAAS last saw (MAAS, like Ironic's power sync, keeps it up to
date itself), else the one Drydock last saw, so listing 10,000 nodes does not make 10,000
BMC requests. One node (GET /nodes/{name}) is always asked of its BMC.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from common.context import RequestContext
from common.errors import BerthError, NotFound
from drydock_api.db.models import NodeRecord
from drydock_api.drivers.ports import Machine, NodeDriver, OobDriver
from drydock_api.nodes.design import Design, NodeDef


class Inventory:
    def __init__(self, maas: NodeDriver, oob: OobDriver,
                 records: Callable[[], dict[str, NodeRecord]],
                 last_design_ref: Callable[[], Any],
                 designs: Callable[[Any, RequestContext], Design],
                 parallel: int = 32, live_power_limit: int = 100) -> None:
        self._maas = maas
        self._oob = oob
        self._records = records
        self._last_ref = last_design_ref
        self._designs = designs
        self._parallel = parallel
        self._live_power_limit = live_power_limit

    def nodes(self, ctx: RequestContext, design_ref: Any = None,
              names: list[str] | None = None,
              retired: bool | None = None) -> list[dict[str, Any]]:
        """Every design node (or `names`, or only the (un)retired ones); without a design,
        the machines MAAS knows."""
        found = self._nodes(ctx, design_ref, names)
        return found if retired is None else [n for n in found if n["retired"] == retired]

    def _nodes(self, ctx: RequestContext, design_ref: Any,
               names: list[str] | None) -> list[dict[str, Any]]:
        ref = design_ref or self._last_ref()
        design = self._designs(ref, ctx) if ref else None
        machines, maas_error = self._machines()
        records = self._records()
        if design is None:
            return [self._entry(None, m.hostname, m, records.get(m.hostname), None, maas_error)
                    for m in machines.values() if names is None or m.hostname in names]
        chosen = [design.nodes[n] for n in (names or list(design.nodes))
                  if n in design.nodes]
        powers = self._powers(chosen, machines, records)
        return [self._entry(node, node.name, machines.get(node.name), records.get(node.name),
                            power, maas_error) for node, power in zip(chosen, powers, strict=True)]

    def _powers(self, nodes: list[NodeDef], machines: dict[str, Machine],
                records: dict[str, NodeRecord]) -> list[tuple[str | None, str | None]]:
        """Live from the BMCs for a short list; what MAAS (or Drydock) last saw for a long one."""
        if len(nodes) > self._live_power_limit:
            return [(_seen_power(machines.get(n.name), records.get(n.name)), None)
                    for n in nodes]
        with ThreadPoolExecutor(max_workers=max(1, min(self._parallel, len(nodes) or 1))) as ex:
            return list(ex.map(self._power, nodes))

    def node(self, ctx: RequestContext, name: str, design_ref: Any = None) -> dict[str, Any]:
        found = self.nodes(ctx, design_ref, [name])
        if not found:
            raise NotFound(f"Node {name} is not in the design", reason="NodeNotFound")
        return found[0]

    def require(self, ctx: RequestContext, name: str, design_ref: Any = None) -> None:
        """404 unless the node is in the design (or, with no design yet, known to MAAS)."""
        ref = design_ref or self._last_ref()
        known = self._designs(ref, ctx).nodes if ref else self._machines()[0]
        if name not in known:
            raise NotFound(f"Node {name} is not in the design", reason="NodeNotFound")

    def _machines(self) -> tuple[dict[str, Machine], str | None]:
        try:
            return {m.hostname: m for m in self._maas.list_machines()}, None
        except BerthError as exc:
            return {}, exc.message

    def _power(self, node: NodeDef) -> tuple[str | None, str | None]:
        if node.bmc is None:
            return None, "no usable oob access in the design"
        try:
            return self._oob.power_state(node.bmc), None
        except BerthError as exc:
            return None, exc.message

    @staticmethod
    def _entry(node: NodeDef | None, name: str, machine: Machine | None,
               record: NodeRecord | None, power: tuple[str | None, str | None] | None,
               maas_error: str | None) -> dict[str, Any]:
        state, power_error = power or ((machine.power_state if machine else None), None)
        return {
            "hostname": name,
            "name": name,
            "in_design": node is not None,
            "rack": node.rack if node else None,
            "tags": list(node.tags) if node else [],
            "labels": dict(node.labels) if node else {},
            "oob_type": node.oob_type if node else None,
            "oob_address": node.oob_address if node else None,
            "power_address": node.oob_address if node else None,
            "maas_system_id": machine.system_id if machine else None,
            "maas_status": machine.status_name if machine else None,
            "status_name": machine.status_name if machine else None,
            "maas_error": maas_error,
            "power_state": state,
            "power_error": power_error,
            "retired": bool(record and record.retired),
            "retired_reason": record.retired_reason if record else None,
            "torn_down": bool(record and record.torn_down),
            "pending_reboot_since": _iso(record.pending_reboot_since if record else None),
            "last_powered_on": _iso(record.last_powered_on if record else None),
            "last_task_id": record.last_task_id if record else None,
            "reboot_error": record.reboot_error if record else None,
        }


def _seen_power(machine: Machine | None, record: NodeRecord | None) -> str | None:
    if machine is not None and machine.power_state in ("on", "off"):
        return machine.power_state
    return record.power_state if record is not None else None


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()
