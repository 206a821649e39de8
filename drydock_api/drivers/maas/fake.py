"""An in-memory MAAS for unit tests: machines, allocate/release/commission/deploy, storage, tags,
faults."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter

from drydock_api.drivers.ports import (
    BlockDevice,
    MaasError,
    Machine,
    PartitionInfo,
    ScriptResult,
)

DISKS = {"sda": 100 * 10**9, "sdb": 500 * 10**9}
RELEASABLE = frozenset({"Allocated", "Deployed", "Deploying", "Failed deployment",
                        "Failed releasing", "Failed disk erasing", "Broken", "Reserved"})


class FakeMaas:
    """Provisioner fake; operations complete at once unless `release_completes` is False
    (machines stay Releasing) or a node is in `fail_commission` / `fail_deploy`."""

    def __init__(self, hostnames: list[str] | None = None) -> None:
        self.machines: dict[str, Machine] = {}
        self.devices: dict[str, list[BlockDevice]] = {}
        self.calls: Counter[tuple[str, str]] = Counter()
        self.erase_modes: dict[str, str | None] = {}
        self.fail_release: dict[str, str] = {}
        self.fail_commission: set[str] = set()
        self.fail_deploy: set[str] = set()
        self.deployed_images: dict[str, str] = {}
        self.deployed_kernels: dict[str, str | None] = {}
        self.user_data: dict[str, str | None] = {}
        self.release_completes = True
        self.tag_names: set[str] = set()
        self.machine_tags: dict[str, set[str]] = {}
        self.config: dict[str, str] = {}
        self.results: dict[str, list[ScriptResult]] = {}  # system id -> commissioning results
        self._settling: set[str] = set()
        self._next = 1000
        self._lock = threading.RLock()
        for name in hostnames or []:
            self.add(name)

    def add(self, hostname: str, status: str = "Deployed", mac: str | None = None) -> Machine:
        machine = Machine(f"id-{hostname}", hostname, status, "on", mac=mac)
        self.machines[machine.system_id] = machine
        self.devices[machine.system_id] = [BlockDevice(i + 1, n, size)
                                           for i, (n, size) in enumerate(DISKS.items())]
        return machine

    def status(self, hostname: str) -> str | None:
        found = self.find_machine(hostname)
        return found.status_name if found else None

    def _set(self, system_id: str, status: str) -> Machine:
        machine = self._get(system_id)
        new = dataclasses.replace(machine, status_name=status, status_message=status)
        self.machines[system_id] = new
        return new

    def _get(self, system_id: str) -> Machine:
        machine = self.machines.get(system_id)
        if machine is None:
            raise MaasError(f"MAAS refused {system_id} (404): No Machine matches")
        return machine

    def find_machine(self, hostname: str) -> Machine | None:
        with self._lock:
            self.calls[("find", hostname)] += 1
            self._settle()
            return next((m for m in self.machines.values() if m.hostname == hostname), None)

    def commissioning_results(self, system_id: str) -> list[ScriptResult]:
        with self._lock:
            self.calls[("commissioning_results", system_id)] += 1
            self._get(system_id)
            return list(self.results.get(system_id, []))

    def find_by_mac(self, mac: str) -> Machine | None:
        with self._lock:
            self._settle()
            return next((m for m in self.machines.values() if m.mac == mac), None)

    def list_machines(self) -> list[Machine]:
        with self._lock:
            self._settle()
            return list(self.machines.values())

    def rename(self, system_id: str, hostname: str) -> Machine:
        with self._lock:
            new = dataclasses.replace(self._get(system_id), hostname=hostname)
            self.machines[system_id] = new
            return new

    def release(self, system_id: str, erase: str | None) -> Machine:
        """As MAAS: a Ready or Releasing machine is answered as it is (nothing is done, no
        erase); a releasable one answers Disk erasing (with erase) or Releasing, and reads
        Ready afterwards unless `release_completes` is False; any other status is 409."""
        with self._lock:
            machine = self._get(system_id)
            self.calls[("release", machine.hostname)] += 1
            if machine.hostname in self.fail_release:
                raise MaasError(self.fail_release[machine.hostname])
            if machine.status_name in ("Ready", "Releasing"):
                return machine
            if machine.status_name not in RELEASABLE:
                raise MaasError(f"MAAS refused release (409): Machine cannot be released in "
                                f"its current state ('{machine.status_name}').")
            self.erase_modes[machine.hostname] = erase
            if self.release_completes:
                self._settling.add(system_id)
            return self._set(system_id, "Disk erasing" if erase else "Releasing")

    def _settle(self) -> None:
        """Releases started since the last read have finished (the machine reads Ready)."""
        for system_id in self._settling:
            if system_id in self.machines:
                self._set(system_id, "Ready")
        self._settling.clear()

    def delete_machine(self, system_id: str) -> None:
        with self._lock:
            machine = self.machines.pop(system_id, None)
            if machine is not None:
                self.calls[("delete", machine.hostname)] += 1

    def commission(self, system_id: str) -> Machine:
        with self._lock:
            machine = self._get(system_id)
            self.calls[("commission", machine.hostname)] += 1
            failed = machine.hostname in self.fail_commission
            return self._set(system_id, "Failed commissioning" if failed else "Ready")

    def allocate(self, system_id: str) -> Machine:
        with self._lock:
            machine = self._get(system_id)
            if machine.status_name != "Ready":
                raise MaasError(f"MAAS refused allocate (409): No available machine matches "
                                f"constraints: system_id={system_id} ({machine.status_name})")
            self.calls[("allocate", machine.hostname)] += 1
            return self._set(system_id, "Allocated")

    def deploy(self, system_id: str, distro_series: str, hwe_kernel: str | None = None,
               user_data: str | None = None) -> Machine:
        with self._lock:
            machine = self._get(system_id)
            self.calls[("deploy", machine.hostname)] += 1
            self.user_data[machine.hostname] = user_data
            self.deployed_images[machine.hostname] = distro_series
            self.deployed_kernels[machine.hostname] = hwe_kernel
            failed = machine.hostname in self.fail_deploy
            return self._set(system_id, "Failed deployment" if failed else "Deployed")

    def block_devices(self, system_id: str) -> list[BlockDevice]:
        with self._lock:
            return list(self.devices.get(system_id, []))

    def _edit(self, system_id: str, device_id: int, fn: object) -> None:
        devices = self.devices[system_id]
        for i, dev in enumerate(devices):
            if dev.id == device_id:
                devices[i] = fn(dev)  # type: ignore[operator]
                return
        raise MaasError(f"MAAS refused: no block device {device_id} (404)")

    def create_partition(self, system_id: str, device_id: int, size: int | None) -> int:
        with self._lock:
            self._next += 1
            part = PartitionInfo(self._next, size or 0)
            self._edit(system_id, device_id,
                       lambda d: dataclasses.replace(d, partitions=(*d.partitions, part)))
            return part.id

    def format_partition(self, system_id: str, device_id: int, part_id: int, fstype: str,
                         mount_point: str | None) -> None:
        def fmt(d: BlockDevice) -> BlockDevice:
            parts = tuple(dataclasses.replace(p, fstype=fstype, mount_point=mount_point)
                          if p.id == part_id else p for p in d.partitions)
            return dataclasses.replace(d, partitions=parts)

        with self._lock:
            self._edit(system_id, device_id, fmt)

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        with self._lock:
            self.calls[("partition_delete", self._get(system_id).hostname)] += 1
            self._edit(system_id, device_id, lambda d: dataclasses.replace(
                d, partitions=tuple(p for p in d.partitions if p.id != part_id)))

    def unformat_device(self, system_id: str, device_id: int) -> None:
        with self._lock:
            self._edit(system_id, device_id, lambda d: dataclasses.replace(d, fstype=None))

    def tags(self) -> list[str]:
        return sorted(self.tag_names)

    def create_tag(self, name: str, comment: str) -> None:
        self.tag_names.add(name)

    def tag_machine(self, tag: str, system_id: str) -> None:
        self.machine_tags.setdefault(system_id, set()).add(tag)

    def delete_tag(self, name: str) -> None:
        self.tag_names.discard(name)
        for tags in self.machine_tags.values():
            tags.discard(name)

    def get_config(self, name: str) -> str | None:
        return self.config.get(name)

    def set_config(self, name: str, value: str) -> None:
        self.config[name] = value

    def check(self) -> str:
        return "fake MAAS"
