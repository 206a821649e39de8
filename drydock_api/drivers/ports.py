"""The ports Drydock's steps use: NodeDriver (MAAS) and OobDriver (BMCs), and their errors.

    BadGateway (common)
    └── DriverError          an external system failed; `transient` says if a retry may help
        ├── MaasError        MAAS answered with an error (its message kept) or not at all
        └── OobError         a BMC failed or did not answer
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from common.errors import BadGateway
from drydock_api.nodes.design import BmcAccess


class DriverError(BadGateway):
    reason, title = "DriverError", "External system failed"

    def __init__(self, message: str, *, transient: bool = False, **kwargs: Any) -> None:
        self.transient = transient
        super().__init__(message, **kwargs)


class MaasError(DriverError):
    reason, title = "MaasError", "MAAS call failed"


class OobError(DriverError):
    reason, title = "OobError", "BMC call failed"


@dataclass(frozen=True)
class Machine:
    """A MAAS machine as Drydock needs it."""

    system_id: str
    hostname: str
    status_name: str
    power_state: str | None = None
    status_message: str | None = None


class NodeDriver(Protocol):
    """The provisioner (MAAS)."""

    def find_machine(self, hostname: str) -> Machine | None:
        """The machine with this hostname, or None when MAAS does not know it."""

    def list_machines(self) -> list[Machine]:
        """Every machine MAAS knows."""

    def release(self, system_id: str, erase: str | None) -> Machine:
        """Release; `erase` None (no erase), 'secure' or 'quick'."""

    def delete_machine(self, system_id: str) -> None:
        """Remove the machine from MAAS (absent already is fine)."""

    def check(self) -> str:
        """Reachable and authorised? Returns a short description (raises otherwise)."""


class OobDriver(Protocol):
    """A node's BMC (Redfish or IPMI)."""

    def power_state(self, bmc: BmcAccess) -> str:
        """'on' or 'off'."""

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        """Request power off: graceful (OS shutdown) or forced. Does not wait."""

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        """Drives whose BMC offers Drive.SecureErase: device name → drive handle."""

    def secure_erase(self, bmc: BmcAccess, drive: str) -> None:
        """Start a secure erase of one drive (a handle from `erasable_drives`)."""


class OobRouter:
    """An OobDriver choosing the Redfish or IPMI driver by the node's `oob.type`."""

    def __init__(self, drivers: dict[str, OobDriver]) -> None:
        self._drivers = drivers

    def _pick(self, bmc: BmcAccess) -> OobDriver:
        try:
            return self._drivers[bmc.type]
        except KeyError:
            raise OobError(f"No driver for oob type {bmc.type}") from None

    def power_state(self, bmc: BmcAccess) -> str:
        return self._pick(bmc).power_state(bmc)

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        self._pick(bmc).power_off(bmc, graceful=graceful)

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        return self._pick(bmc).erasable_drives(bmc)

    def secure_erase(self, bmc: BmcAccess, drive: str) -> None:
        self._pick(bmc).secure_erase(bmc, drive)
