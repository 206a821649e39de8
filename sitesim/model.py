"""The shared truth of a simulated site: power, disks, MAAS status, calls and faults per node."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sitesim.hooks import FaultEffect
from sitesim.scheduler import Scheduler
from sitesim.siteconfig import FaultSpec, SiteSpec, parse_fault

PowerListener = Callable[[str, bool], None]
MAX_OPERATIONS = 10_000  # the operation log keeps the newest ones


class KubePort(Protocol):
    """The part of the site's Kubernetes the site model drives (sitesim.kube.sitekube)."""

    def add_node(self, name: str, labels: dict[str, str], *, ready: bool = True,
                 control_plane: bool = False) -> Any: ...

    def set_ready(self, name: str, ready: bool) -> Any:
        """Start (True) or stop (False) the node's kubelet."""

    def node_summary(self, name: str) -> dict[str, Any] | None: ...

    def node_summaries(self) -> Mapping[str, dict[str, Any]]:
        """`node_summary` of every node present, at once (absent nodes left out)."""


class UnknownNode(KeyError):
    """No node of that name in the site."""


@dataclass
class DiskState:
    """What is on one disk: `marker` stands for its bytes (a new one = new content)."""

    marker: str | None
    wiped: bool = False
    wiped_by: str | None = None

    def wipe(self, method: str = "wiped") -> None:
        self.marker, self.wiped, self.wiped_by = None, True, method

    def write(self, marker: str) -> None:
        self.marker, self.wiped, self.wiped_by = marker, False, None


@dataclass
class NodeState:
    name: str
    power: bool
    disks: dict[str, DiskState]
    os_disk: str
    maas_status: str | None
    bmc: dict[str, Any] = field(default_factory=dict)
    boot_device: str = "hdd"
    bmc_running: bool = True
    mounts: dict[str, dict[str, str]] = field(default_factory=dict)


class SiteModel:
    """Thread-safe node state; implements `SiteHooks` (calls and faults) for every simulator."""

    def __init__(self, spec: SiteSpec, scheduler: Scheduler) -> None:
        self.spec = spec
        self.scheduler = scheduler
        self._lock = threading.RLock()
        self._fault_cond = threading.Condition(self._lock)
        self._calls: Counter[tuple[str, str, str | None]] = Counter()
        self._operations: list[dict[str, Any]] = []
        self._faults: dict[tuple[str, str], FaultEffect] = {}
        self._power_listeners: list[PowerListener] = []
        self._fault_listeners: list[Callable[[FaultSpec | None], None]] = []
        self.kube: KubePort | None = None
        self.maas_up = True  # False: the MAAS API answers every request 503 (an outage)
        self.etcd_members: Callable[[], dict[str, list[dict[str, str]]]] = dict
        # Nodes whose BMC is a process of its own: how to stop (False) and start (True) it.
        self.bmc_switches: dict[str, Callable[[bool], None]] = {}
        self.nodes: dict[str, NodeState] = {}
        for node in spec.nodes:
            deployed = node.state == "deployed"
            os_disk = next(d.name for d in node.disks if d.is_os_disk)
            disks = {d.name: DiskState(marker=self.new_marker(node.name, d.name)
                                       if deployed or d.name != os_disk else None)
                     for d in node.disks}
            self.nodes[node.name] = NodeState(
                name=node.name, power=deployed, disks=disks, os_disk=os_disk,
                maas_status=None)
        for fault in spec.faults:
            self._faults[(fault.node, fault.operation)] = fault.effect  # type: ignore[assignment]

    @staticmethod
    def new_marker(node: str, disk: str) -> str:
        return f"{node}:{disk}:{uuid.uuid4().hex[:12]}"

    def node(self, name: str) -> NodeState:
        try:
            return self.nodes[name]
        except KeyError:
            raise UnknownNode(name) from None

    # --- SiteHooks -------------------------------------------------------------------------
    def record_call(self, system: str, op: str, node: str | None) -> None:
        with self._lock:
            self._calls[(system, op, node)] += 1

    def record_operation(self, system: str, op: str, node: str | None, seconds: float) -> None:
        start = time.time()
        with self._lock:
            self._operations.append({"system": system, "op": op, "node": node, "start": start,
                                     "end": start + max(0.0, seconds)})
            del self._operations[:-MAX_OPERATIONS]

    def fault(self, operation: str, node: str) -> FaultEffect | None:
        with self._lock:
            return self._faults.get((node, operation))

    def operations(self, node: str | None = None, since: float = 0.0) -> list[dict[str, Any]]:
        """Simulated work (oldest first) of `node` that ended after `since` (epoch seconds)."""
        with self._lock:
            return [dict(o) for o in self._operations
                    if (node is None or o["node"] == node) and o["end"] > since]

    # --- calls and faults ------------------------------------------------------------------
    def call_count(self, system: str | None = None, op: str | None = None,
                   node: str | None = None) -> int:
        with self._lock:
            return sum(n for (s, o, nd), n in self._calls.items()
                       if (system is None or s == system) and (op is None or o == op)
                       and (node is None or nd == node))

    def add_fault(self, raw: Any) -> FaultSpec:
        """Validate and inject a fault (raises SiteConfigError listing the problems)."""
        fault = parse_fault(raw, set(self.nodes))
        with self._lock:
            self._faults[(fault.node, fault.operation)] = fault.effect  # type: ignore[assignment]
        for listener in list(self._fault_listeners):
            listener(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._fault_cond.notify_all()
        for listener in list(self._fault_listeners):
            listener(None)

    def faults(self) -> list[dict[str, str]]:
        with self._lock:
            return [{"node": n, "operation": o, "effect": e} for (n, o), e in self._faults.items()]

    def on_fault_change(self, listener: Callable[[FaultSpec | None], None]) -> None:
        self._fault_listeners.append(listener)

    def wait_while_hung(self, operation: str, node: str, limit: float = 3600.0) -> None:
        """Block the caller while a `hang` fault for (operation, node) is in place."""
        with self._fault_cond:
            self._fault_cond.wait_for(
                lambda: self._faults.get((node, operation)) != "hang", timeout=limit)

    # --- power -----------------------------------------------------------------------------
    def on_power_change(self, listener: PowerListener) -> None:
        self._power_listeners.append(listener)

    def is_on(self, name: str) -> bool:
        with self._lock:
            return self.node(name).power

    def set_power(self, name: str, on: bool) -> None:
        """Apply a power state now; Kubernetes readiness follows after the configured delay."""
        with self._lock:
            state = self.node(name)
            changed = state.power != on
            state.power = on
        if not changed:
            return
        timings = self.spec.timings
        if on:
            self.scheduler.call_later(timings.kube_ready, lambda: self._kube_ready_if_on(name))
        else:
            self.scheduler.call_later(timings.kube_not_ready, lambda: self._kube_down_if_off(name))
        for listener in list(self._power_listeners):
            listener(name, on)

    def set_power_later(self, name: str, on: bool, delay: float) -> None:
        self.record_operation("bmc", "power_on" if on else "power_off", name, delay)
        self.scheduler.call_later(delay, lambda: self.set_power(name, on))

    def _kube_ready_if_on(self, name: str) -> None:
        """A deployed server powered on starts its kubelet (if its Node is registered)."""
        if self.kube is None or not self.is_on(name):
            return
        if self.maas_status(name) not in (None, "Deployed"):
            return
        summary = self.kube.node_summary(name)
        if summary and summary.get("present") and not summary.get("kubelet"):
            self.kube.set_ready(name, True)

    def _kube_down_if_off(self, name: str) -> None:
        """A server powered off stops its kubelet; Kubernetes notices by itself."""
        if self.kube is None or self.is_on(name):
            return
        summary = self.kube.node_summary(name)
        if summary and summary.get("present") and summary.get("kubelet"):
            self.kube.set_ready(name, False)

    # --- disks, MAAS status, BMC -------------------------------------------------------------
    def wipe_disk(self, name: str, disk: str, method: str = "wiped") -> None:
        with self._lock:
            self.node(name).disks[disk].wipe(method)

    def wipe_all_disks(self, name: str, method: str = "wiped") -> None:
        with self._lock:
            for disk in self.node(name).disks.values():
                disk.wipe(method)

    def write_disk(self, name: str, disk: str) -> str:
        """New content on a disk (a new partition table and filesystems)."""
        with self._lock:
            marker = self.new_marker(name, disk)
            self.node(name).disks[disk].write(marker)
            return marker

    def set_mounts(self, name: str, mounts: dict[str, dict[str, str]]) -> None:
        with self._lock:
            self.node(name).mounts = dict(mounts)

    def write_os_marker(self, name: str) -> str:
        with self._lock:
            state = self.node(name)
            marker = self.new_marker(name, state.os_disk)
            state.disks[state.os_disk].write(marker)
            return marker

    def set_maas_status(self, name: str, status: str | None) -> None:
        with self._lock:
            self.node(name).maas_status = status

    def maas_status(self, name: str) -> str | None:
        with self._lock:
            return self.node(name).maas_status

    def set_bmc_info(self, name: str, info: Mapping[str, Any]) -> None:
        with self._lock:
            self.node(name).bmc.update(info)

    def set_bmc_running(self, name: str, running: bool) -> None:
        """Kill or restart the node's BMC (its process, or its answers when it has none)."""
        switch = self.bmc_switches.get(name)
        if switch is not None:
            switch(running)
        with self._fault_cond:
            self.node(name).bmc_running = running
            self._fault_cond.notify_all()

    def bmc_running(self, name: str) -> bool:
        with self._lock:
            return self.node(name).bmc_running

    def wait_for_bmc(self, name: str, limit: float) -> bool:
        """Block while the node's BMC is down (at most `limit` s); whether it is up."""
        with self._fault_cond:
            return self._fault_cond.wait_for(lambda: self.node(name).bmc_running, timeout=limit)

    def set_boot_device(self, name: str, device: str) -> None:
        with self._lock:
            self.node(name).boot_device = device

    def boot_device(self, name: str) -> str:
        with self._lock:
            return self.node(name).boot_device

    # --- observation -------------------------------------------------------------------------
    def view(self, name: str, etcd: Mapping[str, list[dict[str, str]]] | None = None,
             kube: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """The observation API's view of one node (`kube`: every node's summary, at hand)."""
        with self._lock:
            state = self.node(name)
            body: dict[str, Any] = {
                "name": name,
                "power": "on" if state.power else "off",
                "maas_status": state.maas_status,
                "disks": {d: {"marker": s.marker, "wiped": s.wiped, "wiped_by": s.wiped_by}
                          for d, s in state.disks.items()},
                "mounts": {k: dict(v) for k, v in state.mounts.items()},
                "bmc": {**state.bmc, "boot_device": state.boot_device,
                        "running": state.bmc_running},
            }
        if kube is not None:
            summary = kube.get(name)
        else:
            summary = self.kube.node_summary(name) if self.kube is not None else None
        body["kubernetes"] = summary or {"present": False, "ready": False,
                                         "unschedulable": False, "labels": {}}
        memberships = self.etcd_members() if etcd is None else etcd
        body["etcd"] = memberships.get(name, [])
        return body

    def views(self) -> list[dict[str, Any]]:
        etcd = self.etcd_members()
        kube = self.kube.node_summaries() if self.kube is not None else None
        return [self.view(name, etcd, kube) for name in self.nodes]
