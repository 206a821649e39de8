"""An in-memory MAAS for unit tests: machines, release with erase modes, call counts, faults."""

from __future__ import annotations

import threading
from collections import Counter

from drydock_api.drivers.ports import MaasError, Machine


class FakeMaas:
    """NodeDriver fake; `release_completes` False leaves machines Releasing."""

    def __init__(self, hostnames: list[str] | None = None) -> None:
        self.machines: dict[str, Machine] = {}
        self.calls: Counter[tuple[str, str]] = Counter()
        self.erase_modes: dict[str, str | None] = {}
        self.fail_release: dict[str, str] = {}
        self.release_completes = True
        self._lock = threading.Lock()
        for name in hostnames or []:
            self.add(name)

    def add(self, hostname: str, status: str = "Deployed") -> None:
        self.machines[f"id-{hostname}"] = Machine(f"id-{hostname}", hostname, status, "on")

    def find_machine(self, hostname: str) -> Machine | None:
        with self._lock:
            self.calls[("find", hostname)] += 1
            return next((m for m in self.machines.values() if m.hostname == hostname), None)

    def list_machines(self) -> list[Machine]:
        return list(self.machines.values())

    def release(self, system_id: str, erase: str | None) -> Machine:
        with self._lock:
            machine = self.machines.get(system_id)
            if machine is None:
                raise MaasError(f"MAAS refused release of {system_id} (404): No Machine matches")
            self.calls[("release", machine.hostname)] += 1
            if machine.hostname in self.fail_release:
                raise MaasError(self.fail_release[machine.hostname])
            self.erase_modes[machine.hostname] = erase
            status = "Ready" if self.release_completes else "Releasing"
            new = Machine(system_id, machine.hostname, status, "off")
            self.machines[system_id] = new
            return new

    def delete_machine(self, system_id: str) -> None:
        with self._lock:
            machine = self.machines.pop(system_id, None)
            if machine is not None:
                self.calls[("delete", machine.hostname)] += 1

    def check(self) -> str:
        return "fake MAAS"
