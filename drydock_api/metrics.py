"""Drydock's metrics: tasks by status (read at scrape time), driver calls by outcome."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram
from sqlalchemy import func, select

from common.metrics import BUCKETS, StateCounts, timer
from drydock_api.db.models import TaskRow
from drydock_api.db.store import TaskStore
from drydock_api.drivers.ports import (
    BlockDevice,
    BmcAccess,
    EraseStatus,
    Machine,
    OobDriver,
    Provisioner,
    ScriptResult,
)


class DrydockMetrics:
    """Created with the app's registry; wraps the drivers and watches the task store."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.driver_seconds = Histogram(
            "berth_drydock_driver_call_seconds",
            "Calls to MAAS and the BMCs (node operations) by driver, operation and outcome",
            ["driver", "operation", "outcome"], registry=self.registry, buckets=BUCKETS)
        self.steps_stuck = Counter(
            "berth_drydock_steps_stuck",
            "Node step attempts found running past their attempt timeout (StepStuck)",
            ["step"], registry=self.registry)

    def count_stuck(self, step: str) -> None:
        self.steps_stuck.labels(step).inc()

    def timed_oob(self, driver: str, target: OobDriver) -> OobDriver:
        """`target` with every call timed under `driver` (redfish, ipmi)."""
        return TimedOob(target, self.driver_seconds, driver)

    def timed_maas(self, target: Provisioner, driver: str = "maas") -> Provisioner:
        """`target` with every call timed under the driver label `driver` (maas, ironic)."""
        return TimedMaas(target, self.driver_seconds, driver)

    def watch(self, store: TaskStore) -> None:
        """Serve top-level tasks by action, status and result (queried on each scrape)."""

        def tasks() -> Iterable[tuple[Sequence[str], float]]:
            query = (select(TaskRow.action, TaskRow.status, TaskRow.result, func.count())
                     .where(TaskRow.parent_id.is_(None))
                     .group_by(TaskRow.action, TaskRow.status, TaskRow.result))
            with store.reads() as s:
                return [((a, st, r), n) for a, st, r, n in s.execute(query).all()]

        self.registry.register(StateCounts("berth_drydock_tasks",
                                           "Top-level tasks stored, by action, status, result",
                                           ["action", "status", "result"], tasks))


class TimedOob:
    """An OobDriver timing each call of `inner`: (driver, operation, ok|error) seconds."""

    def __init__(self, inner: OobDriver, seconds: Histogram, driver: str) -> None:
        self._inner, self._seconds, self._driver = inner, seconds, driver

    def power_state(self, bmc: BmcAccess) -> str:
        with timer(self._seconds, self._driver, "power_state"):
            return self._inner.power_state(bmc)

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        with timer(self._seconds, self._driver, "power_off"):
            self._inner.power_off(bmc, graceful=graceful)

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        with timer(self._seconds, self._driver, "erasable_drives"):
            return self._inner.erasable_drives(bmc)

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        with timer(self._seconds, self._driver, "secure_erase"):
            return self._inner.secure_erase(bmc, drive)

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        with timer(self._seconds, self._driver, "erase_status"):
            return self._inner.erase_status(bmc, task)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        with timer(self._seconds, self._driver, "find_erase"):
            return self._inner.find_erase(bmc, drive)

    def power_on(self, bmc: BmcAccess) -> None:
        with timer(self._seconds, self._driver, "power_on"):
            self._inner.power_on(bmc)

    def power_cycle(self, bmc: BmcAccess) -> None:
        with timer(self._seconds, self._driver, "power_cycle"):
            self._inner.power_cycle(bmc)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        with timer(self._seconds, self._driver, "set_pxe_boot"):
            self._inner.set_pxe_boot(bmc)


class TimedMaas:
    """A Provisioner timing each call of `inner`: (driver, operation, ok|error) seconds."""

    def __init__(self, inner: Provisioner, seconds: Histogram, driver: str) -> None:
        self._inner, self._seconds, self._driver = inner, seconds, driver

    def find_machine(self, hostname: str) -> Machine | None:
        with timer(self._seconds, self._driver, "find_machine"):
            return self._inner.find_machine(hostname)

    def list_machines(self) -> list[Machine]:
        with timer(self._seconds, self._driver, "list_machines"):
            return self._inner.list_machines()

    def release(self, system_id: str, erase: str | None) -> Machine:
        with timer(self._seconds, self._driver, "release"):
            return self._inner.release(system_id, erase)

    def delete_machine(self, system_id: str) -> None:
        with timer(self._seconds, self._driver, "delete_machine"):
            self._inner.delete_machine(system_id)

    def check(self) -> str:
        with timer(self._seconds, self._driver, "check"):
            return self._inner.check()

    def commissioning_results(self, system_id: str) -> list[ScriptResult]:
        """Empty when the provisioner keeps no commissioning results (Ironic)."""
        reader = getattr(self._inner, "commissioning_results", None)
        if reader is None:
            return []
        with timer(self._seconds, self._driver, "commissioning_results"):
            results: list[ScriptResult] = reader(system_id)
            return results

    def create_partition(self, system_id: str, device_id: int, size: int | None) -> int:
        with timer(self._seconds, self._driver, "create_partition"):
            return self._inner.create_partition(system_id, device_id, size)

    def format_partition(self, system_id: str, device_id: int, part_id: int, fstype: str,
                         mount_point: str | None) -> None:
        with timer(self._seconds, self._driver, "format_partition"):
            self._inner.format_partition(system_id, device_id, part_id, fstype, mount_point)

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        with timer(self._seconds, self._driver, "delete_partition"):
            self._inner.delete_partition(system_id, device_id, part_id)

    def unformat_device(self, system_id: str, device_id: int) -> None:
        with timer(self._seconds, self._driver, "unformat_device"):
            self._inner.unformat_device(system_id, device_id)

    def tags(self) -> list[str]:
        with timer(self._seconds, self._driver, "tags"):
            return self._inner.tags()

    def create_tag(self, name: str, comment: str) -> None:
        with timer(self._seconds, self._driver, "create_tag"):
            self._inner.create_tag(name, comment)

    def tag_machine(self, tag: str, system_id: str) -> None:
        with timer(self._seconds, self._driver, "tag_machine"):
            self._inner.tag_machine(tag, system_id)

    def delete_tag(self, name: str) -> None:
        with timer(self._seconds, self._driver, "delete_tag"):
            self._inner.delete_tag(name)

    def get_config(self, name: str) -> str | None:
        with timer(self._seconds, self._driver, "get_config"):
            return self._inner.get_config(name)

    def set_config(self, name: str, value: str) -> None:
        with timer(self._seconds, self._driver, "set_config"):
            self._inner.set_config(name, value)

    def find_by_mac(self, mac: str) -> Machine | None:
        with timer(self._seconds, self._driver, "find_by_mac"):
            return self._inner.find_by_mac(mac)

    def rename(self, system_id: str, hostname: str) -> Machine:
        with timer(self._seconds, self._driver, "rename"):
            return self._inner.rename(system_id, hostname)

    def commission(self, system_id: str) -> Machine:
        with timer(self._seconds, self._driver, "commission"):
            return self._inner.commission(system_id)

    def allocate(self, system_id: str) -> Machine:
        with timer(self._seconds, self._driver, "allocate"):
            return self._inner.allocate(system_id)

    def deploy(self, system_id: str, distro_series: str, hwe_kernel: str | None = None,
               user_data: str | None = None) -> Machine:
        with timer(self._seconds, self._driver, "deploy"):
            return self._inner.deploy(system_id, distro_series, hwe_kernel, user_data)

    def block_devices(self, system_id: str) -> list[BlockDevice]:
        with timer(self._seconds, self._driver, "block_devices"):
            return self._inner.block_devices(system_id)
