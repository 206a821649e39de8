"""MAAS machines of a simulated site: state, timed transitions and their effects on the site."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from sitesim.firstboot import HostAgent, handed_over
from sitesim.maas.disks import (
    UserDataError,
    apply_layout,
    erase_disks,
    mounts_from_user_data,
)
from sitesim.maas.records import BlockDevice, Machine, Partition
from sitesim.maas.statuses import OPERATIONS, STORAGE_EDITABLE, Operation, Status
from sitesim.model import SiteModel
from sitesim.siteconfig import NodeSpec

INITIAL = {"deployed": Status.DEPLOYED, "ready": Status.READY, "new": Status.NEW}
STORAGE_LAYOUTS = ("flat", "lvm", "bcache", "vmfs6", "vmfs7", "custom", "blank")


class MaasError(Exception):
    """An error answered the way MAAS answers it: a status code and a plain-text body."""

    def __init__(self, code: int, text: str) -> None:
        self.code, self.text = code, text
        super().__init__(text)


def system_id_for(name: str) -> str:
    digest = hashlib.sha1(name.encode()).hexdigest()
    alphabet = "abcdefghjkmnpqrstwxy0123456789"
    return "".join(alphabet[int(digest[i:i + 2], 16) % len(alphabet)] for i in range(0, 12, 2))


class MachineStore:
    """Every MAAS machine, its operations and their timed completions."""

    def __init__(self, model: SiteModel, power_parameters: Callable[[str], dict[str, Any]]) -> None:
        self._model = model
        self._lock = threading.RLock()
        self._machines: dict[str, Machine] = {}
        self._power_parameters = power_parameters
        self.tags: dict[str, str] = {}
        self.config: dict[str, str] = {"default_osystem": "ubuntu",
                                       "default_distro_series": "focal",
                                       "commissioning_distro_series": "focal"}
        self._hung: list[tuple[Machine, Operation, int]] = []  # waiting for a fault to clear
        self.host = HostAgent(model)  # deployed machines' first boots
        model.on_fault_change(lambda _fault: self._resume_hung())

    def enlist(self, node: NodeSpec) -> Machine | None:
        status = INITIAL.get(node.state)
        if status is None:
            return None
        return self.create(node.name, node.mac, status, node)

    def enlist_by_request(self, hostname: str, macs: list[str]) -> Machine:
        """POST /machines/: enlist one of the site's nodes (then commission it, as MAAS does)."""
        problems: dict[str, list[str]] = {}
        try:
            node = self._model.spec.node(hostname)
        except KeyError:
            problems["hostname"] = [f"{hostname!r} is not a machine of this simulated site."]
        if not macs:
            problems["mac_addresses"] = ["This field is required."]
        if problems:
            raise MaasError(400, json.dumps(problems))
        if self.by_hostname(hostname) is not None:
            raise MaasError(400, json.dumps({"hostname": [
                f"Node with hostname {hostname!r} already exists."]}))
        machine = self.create(hostname, macs[0], Status.NEW, node)
        return self.commission(machine.system_id)

    @staticmethod
    def read_disks(node: NodeSpec, configured: bool = False) -> list[BlockDevice]:
        """The node's disks as commissioning finds them; `configured` adds the partitions of
        the node's storage layout (a machine deployed before the site started)."""
        devices = [BlockDevice(id=i + 1, name=d.name, size=d.size_gb * 10**9)
                   for i, d in enumerate(node.disks)]
        if configured:
            for device, disk in zip(devices, node.disks, strict=True):
                for index, part in enumerate(disk.partitions):
                    fs = part.get("filesystem") or {}
                    device.partitions.append(Partition(
                        id=device.id * 100 + index, size=device.size // (len(disk.partitions)
                                                                         or 1),
                        fstype=fs.get("fstype"), mount_point=fs.get("mountpoint")))
        return devices

    def on_power(self, name: str, on: bool) -> None:
        """A node powered on that boots from the network and that MAAS does not know enlists
        itself: MAAS creates it as New after the boot, and the node powers off again."""
        if not on or self._model.boot_device(name) != "pxe" or self.by_hostname(name):
            return
        self._model.record_operation("maas", "enlist", name, self._model.spec.timings.commission)
        self._model.scheduler.call_later(self._model.spec.timings.commission,
                                         lambda: self._pxe_enlist(name))

    def _pxe_enlist(self, name: str) -> None:
        if (not self._model.is_on(name) or self._model.boot_device(name) != "pxe"
                or self.by_hostname(name) is not None):
            return
        node = self._model.spec.node(name)
        self.create(name, node.mac, Status.NEW, node)
        self._model.record_call("maas", "enlist", name)
        self._model.set_boot_device(name, "hdd")  # the one-time boot override is consumed
        self._model.set_power(name, False)

    def create(self, hostname: str, mac: str, status: Status, node: NodeSpec) -> Machine:
        devices = [] if status == Status.NEW else self.read_disks(
            node, configured=status == Status.DEPLOYED)
        params = self._power_parameters(node.name)
        machine = Machine(
            system_id=system_id_for(hostname), hostname=hostname, mac=mac, status=status,
            power_type=str(params.pop("power_type", "manual")), power_parameters=params,
            tags=list(node.tags), block_devices=devices,
            owner="admin" if status in (Status.DEPLOYED, Status.ALLOCATED) else None,
            distro_series="jammy" if status == Status.DEPLOYED else "")
        with self._lock:
            self._machines[machine.system_id] = machine
        self._model.set_maas_status(hostname, status.label)
        return machine

    # --- queries -------------------------------------------------------------------------
    def list(self, hostnames: list[str], macs: list[str], ids: list[str]) -> list[Machine]:
        with self._lock:
            out = list(self._machines.values())
        if hostnames:
            out = [m for m in out if m.hostname in hostnames]
        if macs:
            wanted = {m.lower() for m in macs}
            out = [m for m in out if m.mac.lower() in wanted]
        if ids:
            out = [m for m in out if m.system_id in ids]
        return sorted(out, key=lambda m: m.hostname)

    def get(self, system_id: str) -> Machine:
        with self._lock:
            machine = self._machines.get(system_id)
        if machine is None:
            raise MaasError(404, "No Machine matches the given query.")
        return machine

    def by_hostname(self, hostname: str) -> Machine | None:
        found = self.list([hostname], [], [])
        return found[0] if found else None

    # --- edits ---------------------------------------------------------------------------
    def update(self, system_id: str, params: Mapping[str, str]) -> Machine:
        machine = self.get(system_id)
        errors = {k: [f"Unknown field {k}."] for k in params
                  if k not in ("hostname", "description", "power_type")
                  and not k.startswith("power_parameters_")}
        if errors:
            raise MaasError(400, _json(errors))
        with self._lock:
            if "hostname" in params:
                machine.hostname = params["hostname"]
            machine.description = params.get("description", machine.description)
            machine.power_type = params.get("power_type", machine.power_type)
            for key, value in params.items():
                if key.startswith("power_parameters_"):
                    machine.power_parameters[key[len("power_parameters_"):]] = value
        return machine

    def delete(self, system_id: str) -> None:
        machine = self.get(system_id)
        with self._lock:
            del self._machines[system_id]
            machine.generation += 1
        self._model.set_maas_status(machine.hostname, None)

    def set_storage_layout(self, system_id: str, layout: str) -> Machine:
        machine = self.get(system_id)
        if layout not in STORAGE_LAYOUTS:
            raise MaasError(400, _json({"storage_layout": [
                f"Select a valid choice. {layout} is not one of the available choices."]}))
        self._require_storage_editable(machine, "set the storage layout")
        machine.storage_layout = layout
        return machine

    def _require_storage_editable(self, machine: Machine, what: str) -> None:
        if machine.status not in STORAGE_EDITABLE:
            raise MaasError(409, f"Cannot {what} because the machine is not Ready or Allocated.")

    # --- operations ----------------------------------------------------------------------
    def allocate(self, name: str | None, system_id: str | None) -> Machine:
        with self._lock:
            candidates = [m for m in self._machines.values()
                          if (name is None or m.hostname == name)
                          and (system_id is None or m.system_id == system_id)
                          and m.status == Status.READY]
        if not candidates:
            constraints = ", ".join(f"{k}={v}" for k, v in
                                    (("name", name), ("system_id", system_id)) if v)
            raise MaasError(409, f"No available machine matches constraints: {constraints}"
                            if constraints else "No machine available.")
        machine = sorted(candidates, key=lambda m: m.hostname)[0]
        self._begin(machine, OPERATIONS["allocate"])
        machine.owner = "admin"
        return machine

    def commission(self, system_id: str) -> Machine:
        machine = self.get(system_id)
        self._begin(machine, OPERATIONS["commission"])
        self._model.set_power(machine.hostname, True)
        return machine

    def deploy(self, system_id: str, distro_series: str, user_data: str = "") -> Machine:
        machine = self.get(system_id)
        if user_data:
            try:
                mounts_from_user_data(user_data)
            except UserDataError as exc:  # MAAS refuses user data it cannot decode
                raise MaasError(400, _json({"user_data": [str(exc)]})) from exc
        self._begin(machine, OPERATIONS["deploy"])
        machine.owner, machine.distro_series = "admin", distro_series or "jammy"
        machine.user_data = user_data
        self._model.set_power(machine.hostname, True)
        return machine

    def release(self, system_id: str, erase: bool, secure: bool, quick: bool) -> Machine:
        """MAAS erases only when `erase` is given; secure/quick choose how (every disk). As
        MAAS, a Ready or Releasing machine is answered as it is: nothing happens, no erase
        (MAAS erases only machines it releases: allocate a Ready machine first)."""
        machine = self.get(system_id)
        if machine.status in (Status.READY, Status.RELEASING):
            return machine
        mode = (secure, quick) if erase else None
        self._begin(machine, OPERATIONS["release"])
        machine.erase_mode = mode
        self._model.set_power(machine.hostname, False)
        return machine

    def _begin(self, machine: Machine, op: Operation) -> None:
        with self._lock:
            if machine.status not in op.allowed_from:
                raise MaasError(409, f"{machine.hostname}: cannot {op.name} a machine in the "
                                f"'{machine.status.label}' state.")
            machine.generation += 1
            generation = machine.generation
            self._set(machine, op.transitional or op.success)
        if op.transitional is None:
            return
        effect = self._model.fault(op.fault, machine.hostname) if op.fault else None
        if effect == "hang":
            with self._lock:
                self._hung.append((machine, op, generation))
            return
        self._schedule(machine, op, generation, effect == "fail")

    def _schedule(self, machine: Machine, op: Operation, generation: int, failed: bool) -> None:
        delay = getattr(self._model.spec.timings, op.duration or "", 0.0)
        self._model.record_operation("maas", op.name, machine.hostname, delay)
        self._model.scheduler.call_later(
            delay, lambda: self._complete(machine, op, generation, failed=failed))

    def _resume_hung(self) -> None:
        """A hung operation goes on once its `hang` fault is cleared (or changed)."""
        with self._lock:
            hung, self._hung = self._hung, []
        for machine, op, generation in hung:
            effect = self._model.fault(op.fault or "", machine.hostname)
            if effect == "hang":
                with self._lock:
                    self._hung.append((machine, op, generation))
            else:
                self._schedule(machine, op, generation, effect == "fail")

    def _complete(self, machine: Machine, op: Operation, generation: int, *, failed: bool) -> None:
        with self._lock:
            if machine.generation != generation or machine.status != op.transitional:
                return
            if op.name == "release" and machine.erase_mode and not failed:
                self._begin(machine, OPERATIONS["erase"])
                return
            self._set(machine, op.failure if failed and op.failure else op.success)
        if failed:
            if op.name != "deploy":
                self._model.set_power(machine.hostname, False)
            return
        self._finish_effects(machine, op)

    def _finish_effects(self, machine: Machine, op: Operation) -> None:
        name = machine.hostname
        if op.name == "commission":
            machine.block_devices = self.read_disks(self._model.spec.node(name))
            self._model.set_power(name, False)
        elif op.name == "deploy":
            apply_layout(self._model, machine)
            handed = handed_over(machine.tags, machine.user_data, name)
            if handed is not None:  # the host joins by its boot actions (Airship's way)
                self.host.boot(name, *handed)
            else:  # deployed without boot actions (no Drydock design has them): as before
                self._join_kubernetes(name)
        elif op.name == "erase":
            erase_disks(self._model, machine)
        if op.name in ("release", "erase"):
            machine.owner, machine.distro_series, machine.user_data = None, "", ""

    def _join_kubernetes(self, name: str) -> None:
        kube = self._model.kube
        if kube is None:
            return
        summary = kube.node_summary(name)
        spec = self._model.spec.node(name)
        if not summary or not summary.get("present"):
            kube.add_node(name, {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                 "kubernetes.io/arch": "amd64"},
                          ready=False, control_plane=spec.control_plane)
        self._model.record_operation("kube", "node_ready", name,
                                     self._model.spec.timings.kube_ready)
        self._model.scheduler.call_later(
            self._model.spec.timings.kube_ready,
            lambda: kube.set_ready(name, True) if self._model.is_on(name) else None)

    def _set(self, machine: Machine, status: Status) -> None:
        machine.status = status
        if self._machines.get(machine.system_id) is machine:
            self._model.set_maas_status(machine.hostname, status.label)

    # --- block devices -------------------------------------------------------------------
    def block_device(self, system_id: str, device_id: int) -> tuple[Machine, BlockDevice]:
        machine = self.get(system_id)
        for device in machine.block_devices:
            if device.id == device_id:
                return machine, device
        raise MaasError(404, "No BlockDevice matches the given query.")

    def partition(self, system_id: str, device_id: int, part_id: int
                  ) -> tuple[Machine, BlockDevice, Partition]:
        machine, device = self.block_device(system_id, device_id)
        for part in device.partitions:
            if part.id == part_id:
                return machine, device, part
        raise MaasError(404, "No Partition matches the given query.")

    def delete_block_device(self, system_id: str, device_id: int) -> None:
        machine, device = self.block_device(system_id, device_id)
        self._require_storage_editable(machine, "delete block device")
        machine.block_devices.remove(device)

    def format(self, target: BlockDevice | Partition, machine: Machine, fstype: str,
               mount_point: str | None = None) -> None:
        self._require_storage_editable(machine, "format")
        if isinstance(target, BlockDevice) and target.partitions:
            raise MaasError(409, "Cannot format a block device that has partitions.")
        target.fstype = fstype
        if isinstance(target, Partition):
            target.mount_point = mount_point

    def unformat(self, target: BlockDevice | Partition, machine: Machine,
                 device: BlockDevice) -> None:
        """Only MAAS's record changes: the disk keeps its bytes until a deploy uses it."""
        self._require_storage_editable(machine, "unformat")
        if target.fstype is None:
            raise MaasError(400, "Block device is not formatted.")
        target.fstype = None
        if isinstance(target, Partition):
            target.mount_point = None

    def mount(self, target: Partition, machine: Machine, mount_point: str) -> None:
        self._require_storage_editable(machine, "mount")
        if target.fstype is None:
            raise MaasError(400, "The partition is not formatted.")
        target.mount_point = mount_point

    def add_partition(self, system_id: str, device_id: int, size: int | None) -> Partition:
        machine, device = self.block_device(system_id, device_id)
        self._require_storage_editable(machine, "create a partition")
        used = sum(p.size for p in device.partitions)
        size = size or device.size - used
        if size <= 0 or used + size > device.size:
            raise MaasError(400, _json({"size": ["Size is too large or not positive."]}))
        machine.next_id += 1
        part = Partition(id=machine.next_id, size=size)
        device.partitions.append(part)
        return part

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        machine, device, part = self.partition(system_id, device_id, part_id)
        self._require_storage_editable(machine, "delete partition")
        device.partitions.remove(part)  # a record edit: no byte on the disk changes


def _json(obj: Any) -> str:
    return json.dumps(obj)
