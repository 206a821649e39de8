"""An in-memory OobDriver for unit tests: power states, graceful shutdown, drives, faults."""

from __future__ import annotations

import threading
from collections import Counter

from drydock_api.drivers.ports import OobError
from drydock_api.nodes.design import BmcAccess


class FakeOob:
    """Keyed by BMC address; `ignore_graceful` holds a node on after a graceful shutdown."""

    def __init__(self) -> None:
        self.power: dict[str, str] = {}
        self.ignore_graceful: set[str] = set()
        self.unreachable: set[str] = set()
        self.drives: dict[str, list[str]] = {}
        self.erased: dict[str, list[str]] = {}
        self.calls: Counter[tuple[str, str]] = Counter()
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

    def secure_erase(self, bmc: BmcAccess, drive: str) -> None:
        with self._lock:
            self._check(bmc, "erase")
            self.erased.setdefault(bmc.address, []).append(drive.split("/")[-1])
