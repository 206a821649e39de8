"""The simulated MAAS's commissioning results (GET /commissioning-results/): what MAAS's
commissioning scripts report of a machine's modelled hardware (its disks, its boot NIC)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sitesim.maas.records import Machine
from sitesim.maas.render import API
from sitesim.maas.statuses import Status

COMMISSIONING = 0  # MAAS's result_type of commissioning scripts (1: deploy, 2: testing)
NOT_COMMISSIONED = frozenset({Status.NEW, Status.COMMISSIONING, Status.FAILED_COMMISSIONING})


def _block_devices(machine: Machine) -> str:
    """00-maas-07-block-devices: one object per disk, as lsblk/udev see it."""
    return json.dumps([{"NAME": d.name, "PATH": f"/dev/{d.name}",
                        "ID_PATH": f"/dev/disk/by-id/wwn-sitesim-{machine.hostname}-{d.name}",
                        "SIZE": str(d.size), "BLOCK_SIZE": "512", "MODEL": "SITESIM DISK",
                        "SERIAL": f"{machine.system_id}-{d.name}", "RO": "0", "RM": "0",
                        "ROTARY": "0", "SATA": "1", "RPM": "0"}
                       for d in machine.block_devices], indent=2)


def _network_interfaces(machine: Machine) -> str:
    """99-maas-03-network-interfaces: `ip addr` of the commissioning environment."""
    return ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\n"
            "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
            "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP\n"
            f"    link/ether {machine.mac} brd ff:ff:ff:ff:ff:ff\n")


SCRIPTS: dict[str, Callable[[Machine], str]] = {
    "00-maas-07-block-devices": _block_devices,
    "99-maas-03-network-interfaces": _network_interfaces,
}


class CommissioningResults:
    """When each machine was last commissioned (a machine the site started commissioned: the
    site's start), and its scripts' results once commissioning is over."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._started = clock()
        self._done_at: dict[str, float] = {}

    def commissioning(self, system_id: str, duration: float) -> None:
        """Commissioning of the machine began; its results are dated when it ends."""
        self._done_at[system_id] = self._clock() + duration

    def of(self, machine: Machine, names: list[str],
           result_type: int | None) -> list[dict[str, Any]]:
        if machine.status in NOT_COMMISSIONED or result_type not in (None, COMMISSIONING):
            return []
        at = datetime.fromtimestamp(self._done_at.get(machine.system_id, self._started),
                                    tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        return [{"id": index + 1, "name": name, "script_result": 0,
                 "result_type": COMMISSIONING, "created": at, "updated": at,
                 "data": base64.b64encode(script(machine).encode()).decode(),
                 "node": {"system_id": machine.system_id},
                 "resource_uri": f"{API}/commissioning-results/"}
                for index, (name, script) in enumerate(SCRIPTS.items())
                if not names or name in names]
