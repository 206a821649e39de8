"""An in-memory OobDriver for unit tests: power states, graceful shutdown, drives, faults."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from drydock_api.drivers.ports import BmcAccess, EraseStatus, OobError


class FakeOob:
    """Keyed by BMC address; `ignore_graceful` holds a node on after a graceful shutdown."""

    def __init__(self) -> None:
        self.power: dict[str, str] = {}
        self.ignore_graceful: set[str] = set()
        self.unreachable: set[str] = set()
        self.drives: dict[str, list[str]] = {}
        self.erased: dict[str, list[str]] = {}
        self.erase_polls = 0           # polls an erase task stays running before it ends
        self.erase_fails: set[str] = set()   # drive names whose erase task fails
        self.tasks: dict[str, tuple[str, str, int]] = {}  # task -> (BMC, drive, polls left)
        self.calls: Counter[tuple[str, str]] = Counter()
        self.pxe: set[str] = set()
        self.on_boot: Callable[[str, bool], None] | None = None
        self._lock = threading.Lock()

    def _check(self, bmc: BmcAccess, op: str) -> None:
        self.calls[(op, bmc.address)] += 1
        if bmc.address in self.unreachable:
            raise OobError(f"BMC {bmc.describe()} did not answer {op}", transient=True)

    def power_state(self, bmc: BmcAccess) -> str:
        with self._lock:
            self._check(bmc, "power_state")
            return self.power.get(bmc.address, "on")

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        with self._lock:
            self._check(bmc, "graceful" if graceful else "force_off")
            if not (graceful and bmc.address in self.ignore_graceful):
                self.power[bmc.address] = "off"

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        with self._lock:
            self._check(bmc, "drives")
            return {d: f"{bmc.address}/{d}" for d in self.drives.get(bmc.address, [])}

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        with self._lock:
            self._check(bmc, "erase")
            task = f"task-{len(self.tasks) + 1}"
            self.tasks[task] = (bmc.address, drive.split("/")[-1], self.erase_polls)
            return task

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        """The last task erasing this drive, as a BMC's task list shows it."""
        with self._lock:
            self._check(bmc, "find_erase")
            name = drive.split("/")[-1]
            found = [t for t, (address, d, _) in self.tasks.items()
                     if address == bmc.address and d == name]
            return found[-1] if found else None

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        with self._lock:
            self._check(bmc, "erase_status")
            address, name, left = self.tasks[task]
            if left > 0:
                self.tasks[task] = (address, name, left - 1)
                return EraseStatus("running", "Running")
            if name in self.erase_fails:
                return EraseStatus("failed", f"task Exception (Critical): erase of {name} "
                                             "failed")
            done = self.erased.setdefault(address, [])
            if name not in done:
                done.append(name)
            return EraseStatus("completed", "Completed")

    def _boot(self, bmc: BmcAccess) -> None:
        pxe = bmc.address in self.pxe
        self.pxe.discard(bmc.address)
        self.power[bmc.address] = "on"
        if self.on_boot is not None:
            self.on_boot(bmc.address, pxe)

    def power_on(self, bmc: BmcAccess) -> None:
        with self._lock:
            self._check(bmc, "power_on")
            if self.power.get(bmc.address, "on") != "on":
                self._boot(bmc)

    def power_cycle(self, bmc: BmcAccess) -> None:
        with self._lock:
            self._check(bmc, "power_cycle")
            self._boot(bmc)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        with self._lock:
            self._check(bmc, "set_pxe")
            self.pxe.add(bmc.address)
