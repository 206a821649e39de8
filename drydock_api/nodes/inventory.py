"""GET /nodes: the design's nodes merged with MAAS state, BMC power state and node records.

Up to `live_limit` nodes are looked up live: each machine in MAAS by hostname and each power
state at the node's BMC (in parallel). A longer list reads the last MAAS listing (see
`snapshot`) and reports the power state MAAS saw (MAAS keeps it current itself, as Ironic's
power sync does), else the one Drydock last saw: listing 10,000 nodes makes no BMC request
and no 70 MB MAAS listing per call. One node (GET /nodes/{name}) is always live.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Literal

from common.clients.generated.drydock import Node
from common.context import RequestContext
from common.errors import BerthError, NotFound
from common.jsontypes import JSON
from drydock_api.db.models import NodeRecord
from drydock_api.db.nodes import teardown_view
from drydock_api.drivers.ports import Machine, MachineLookup, PowerInterface
from drydock_api.drivers.provisioners import Backends
from drydock_api.nodes.design import Design, NodeDef
from drydock_api.nodes.snapshot import Listing, MachineSnapshot

Power = tuple[str | None, str | None]  # (state, error)
PROVISIONERS: dict[str, Literal["maas", "ironic"]] = {"maas": "maas", "ironic": "ironic"}


class Inventory:
    def __init__(self, maas: MachineLookup, power: PowerInterface,
                 records: Callable[[], dict[str, NodeRecord]],
                 last_design_ref: Callable[[], JSON],
                 designs: Callable[[JSON, RequestContext], Design],
                 parallel: int = 32, live_limit: int = 100, listing_max_age: float = 10.0,
                 clock: Callable[[], float] = time.monotonic,
                 records_key: Callable[[], object] | None = None,
                 backends: Backends | None = None) -> None:
        self._maas = maas
        self._bmc_power = power
        self._records = records
        self._last_ref = last_design_ref
        self._designs = designs
        self._parallel = parallel
        self._live_limit = live_limit
        self._snapshot = MachineSnapshot(maas.list_machines, listing_max_age, clock,
                                         on_refresh=self._encode_again)
        # a design's Region names its provisioner: its machines and listing are read there
        self._backends = backends
        self._listings: dict[str, MachineSnapshot] = {}
        self._listing_max_age, self._clock = listing_max_age, clock
        self._records_key = records_key
        # retired filter -> (what it was encoded from, JSON, gzipped JSON, the design_ref asked)
        self._encoded: dict[bool | None, tuple[tuple[Design, Listing, object], bytes, bytes,
                                               JSON]] = {}
        self._encoded_lock = threading.Lock()

    def nodes(self, ctx: RequestContext, design_ref: JSON = None,
              names: list[str] | None = None,
              retired: bool | None = None) -> list[Node]:
        """Every design node (or `names`, or only the (un)retired ones); without a design,
        the machines MAAS knows."""
        found = self._nodes(ctx, design_ref, names, retired)
        return found if retired is None else [n for n in found if n["retired"] == retired]

    def nodes_json(self, ctx: RequestContext, design_ref: JSON = None,
                   retired: bool | None = None) -> tuple[bytes, bytes | None]:
        """`nodes()` as JSON (and gzipped JSON for long lists). A long list depends only on
        the design, the MAAS listing and the node records, so it is encoded again only when
        one of them changed (10,000 nodes: ~4 MB of JSON; the records' key is one small
        query); a live list is encoded every time."""
        ref = design_ref or self._last_ref()
        design = self._designs(ref, ctx) if ref else None
        if design is None or self._records_key is None or len(design.nodes) <= self._live_limit:
            return _encode(self.nodes(ctx, design_ref, retired=retired)), None
        listing = self._provisioner(design)[1].get()
        key = (design, listing, self._records_key())
        with self._encoded_lock:
            hit = self._encoded.get(retired)
        if hit is not None and hit[0][0] is design and hit[0][1] is listing \
                and hit[0][2] == key[2]:
            return hit[1], hit[2]
        found = self._nodes(ctx, design_ref, None, retired, listing)
        data = _encode(found if retired is None else
                       [n for n in found if n["retired"] == retired])
        packed = gzip.compress(data, compresslevel=6, mtime=0)
        with self._encoded_lock:
            self._encoded[retired] = (key, data, packed, design_ref)
        return data, packed

    def _encode_again(self) -> None:
        """After a background MAAS listing: the long lists served so far are encoded again at
        once, in that thread, so the next request finds them ready (10,000 nodes: ~0.4 s)."""
        with self._encoded_lock:
            served = [(retired, entry[3]) for retired, entry in self._encoded.items()]
        for retired, design_ref in served:
            self.nodes_json(RequestContext(), design_ref, retired)

    def _nodes(self, ctx: RequestContext, design_ref: JSON, names: list[str] | None,
               retired: bool | None = None,
               listing: Listing | None = None) -> list[Node]:
        ref = design_ref or self._last_ref()
        design = self._designs(ref, ctx) if ref else None
        records = self._records()
        if design is None:
            listing = self._snapshot.refresh()
            return [self._entry(None, m.hostname, m, records.get(m.hostname), None,
                                listing.error)
                    for m in listing.machines.values() if names is None or m.hostname in names]
        port, snapshot = self._provisioner(design)
        chosen = [design.nodes[n] for n in (names or list(design.nodes))
                  if n in design.nodes and (retired is None or retired == bool(
                      records.get(n) and records[n].retired))]  # only their BMCs are asked
        if len(chosen) > self._live_limit:
            listing = listing or snapshot.get()
            return [self._entry(node, node.name, listing.machines.get(node.name),
                                records.get(node.name),
                                (_seen_power(listing.machines.get(node.name),
                                             records.get(node.name)), None), listing.error)
                    for node in chosen]
        with ThreadPoolExecutor(max_workers=max(1, min(self._parallel, len(chosen) or 1))) as ex:
            live = list(ex.map(partial(self._live, port), chosen))
        return [self._entry(node, node.name, machine, records.get(node.name), power, error)
                for node, (machine, error, power) in zip(chosen, live, strict=True)]

    def node(self, ctx: RequestContext, name: str, design_ref: JSON = None) -> Node:
        found = self.nodes(ctx, design_ref, [name])
        if not found:
            raise NotFound(f"Node {name} is not in the design", reason="NodeNotFound")
        return found[0]

    def require(self, ctx: RequestContext, name: str, design_ref: JSON = None) -> None:
        """404 unless the node is in the design (or, with no design yet, known to MAAS)."""
        ref = design_ref or self._last_ref()
        known = self._designs(ref, ctx).nodes if ref else self._snapshot.refresh().machines
        if name not in known:
            raise NotFound(f"Node {name} is not in the design", reason="NodeNotFound")

    def _provisioner(self, design: Design) -> tuple[MachineLookup, MachineSnapshot]:
        """The provisioner the design's Region names (422 when not configured here) and
        its machine listing."""
        if self._backends is None:
            return self._maas, self._snapshot
        backend = self._backends.get(design.provisioner)
        if backend.port is self._maas:
            return self._maas, self._snapshot
        with self._encoded_lock:
            snapshot = self._listings.get(backend.name)
            if snapshot is None:
                snapshot = self._listings[backend.name] = MachineSnapshot(
                    backend.port.list_machines, self._listing_max_age, self._clock,
                    on_refresh=self._encode_again)
        return backend.port, snapshot

    def _live(self, port: MachineLookup, node: NodeDef) -> tuple[Machine | None, str | None, Power]:
        """The node's machine in its provisioner (or the error) and its power state."""
        try:
            machine, error = port.find_machine(node.name), None
        except BerthError as exc:
            machine, error = None, exc.message
        return machine, error, self._power(node)

    def _power(self, node: NodeDef) -> Power:
        if node.bmc is None:
            return None, "no usable oob access in the design"
        try:
            return self._bmc_power.power_state(node.bmc), None
        except BerthError as exc:
            return None, exc.message

    @staticmethod
    def _entry(node: NodeDef | None, name: str, machine: Machine | None,
               record: NodeRecord | None, power: Power | None,
               maas_error: str | None) -> Node:
        state, power_error = power or ((machine.power_state if machine else None), None)
        return {
            "hostname": name,
            "name": name,
            "in_design": node is not None,
            "provisioner": PROVISIONERS.get(node.provisioner) if node else None,
            "rack": node.rack if node else None,
            "tags": list(node.tags) if node else [],
            "labels": {**node.labels} if node else {},
            "oob_type": node.oob_type if node else None,
            "oob_address": node.oob_address if node else None,
            "power_address": node.oob_address if node else None,
            "maas_system_id": machine.system_id if machine else None,
            "maas_status": machine.status_name if machine else None,
            "status_name": machine.status_name if machine else None,
            # Airship's node view, as MAAS reports the machine (null when it does not)
            "memory": machine.memory if machine else None,
            "cpu_count": machine.cpu_count if machine else None,
            "boot_mac": machine.mac if machine else None,
            "boot_ip": machine.boot_ip if machine else None,
            "maas_error": maas_error,
            "power_state": state,
            "power_error": power_error,
            "retired": bool(record and record.retired),
            "retired_reason": record.retired_reason if record else None,
            "torn_down": bool(record and record.torn_down),
            "teardown": teardown_view(record.teardown) if record else None,
            "pending_reboot_since": _iso(record.pending_reboot_since if record else None),
            "last_powered_on": _iso(record.last_powered_on if record else None),
            "last_task_id": record.last_task_id if record else None,
            "reboot_error": record.reboot_error if record else None,
        }


def _encode(body: object) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


def _seen_power(machine: Machine | None, record: NodeRecord | None) -> str | None:
    if machine is not None and machine.power_state in ("on", "off"):
        return machine.power_state
    return record.power_state if record is not None else None


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat()
