"""The ports Drydock's steps use, one small interface per concern as Ironic shapes them, and
their errors.

    provisioner (MAAS, Ironic)   MachineLookup < MachinesInterface, StorageInterface,
                                 SiteInterface; Provisioner is the three together
    BMC (Redfish, IPMI)          PowerInterface, BootInterface, EraseInterface;
                                 OobDriver is the three together

Each consumer takes the narrowest interface it uses, so a test hands it only that. Every BMC
call takes the node's BmcAccess (read from the design by nodes.design).

    BadGateway (common)
    └── DriverError          an external system failed; `transient` says if a retry may help
        ├── MaasError        MAAS answered with an error (its message kept) or not at all
        └── OobError         a BMC failed or did not answer
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, Unpack

from common.errors import BadGateway, ErrorOptions

PROVISIONERS = ("maas", "ironic")  # a Region's `provisioner`
DEFAULT_PROVISIONER = "maas"


@dataclass(frozen=True)
class BmcAccess:
    """How to reach a node's BMC (read from the design); the credential never appears in repr
    or logs."""

    type: str
    address: str
    port: int
    account: str
    credential: str = field(repr=False)
    system_id: str | None = None
    provisioner: str = DEFAULT_PROVISIONER  # the design's: power goes through Ironic on ironic

    def describe(self) -> str:
        return f"{self.type} {self.address}:{self.port}"


class DriverError(BadGateway):
    reason, title = "DriverError", "External system failed"

    def __init__(self, message: str, *, transient: bool = False,
                 **kwargs: Unpack[ErrorOptions]) -> None:
        self.transient = transient
        kwargs.setdefault("retry", transient)  # the engine retries what says retry
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
    mac: str | None = None
    # As MAAS reports them (None when it does not): for node views (GET /nodes).
    cpu_count: int | None = None
    memory: int | None = None  # MiB
    boot_ip: str | None = None  # the first address linked to the boot interface


@dataclass(frozen=True)
class PartitionInfo:
    id: int
    size: int
    fstype: str | None = None
    mount_point: str | None = None


@dataclass(frozen=True)
class BlockDevice:
    """A machine's physical disk as MAAS records it (its storage configuration)."""

    id: int
    name: str
    size: int
    fstype: str | None = None
    partitions: tuple[PartitionInfo, ...] = ()


@dataclass(frozen=True)
class ScriptResult:
    """The result of one of MAAS's commissioning scripts on a machine, its output decoded."""

    name: str
    exit_status: int | None
    updated: str | None  # as MAAS dates it
    output: str


@dataclass(frozen=True)
class EraseStatus:
    """A BMC drive-erase task: `state` running, completed or failed, with the BMC's words."""

    state: Literal["running", "completed", "failed"]
    message: str = ""


class MachineLookup(Protocol):
    """Reading the provisioner's machines (node views, wipe plans, build data)."""

    def find_machine(self, hostname: str) -> Machine | None:
        """The machine with this hostname, or None when MAAS does not know it."""

    def list_machines(self) -> list[Machine]:
        """Every machine MAAS knows."""


class MachinesInterface(MachineLookup, Protocol):
    """A machine's life in the provisioner: enlist, commission, deploy, release, delete."""

    def find_by_mac(self, mac: str) -> Machine | None:
        """The machine with this boot MAC, or None."""

    def rename(self, system_id: str, hostname: str) -> Machine:
        """Set a machine's hostname."""

    def commission(self, system_id: str) -> Machine:
        """Start commissioning (New / Ready / Failed commissioning)."""

    def allocate(self, system_id: str) -> Machine:
        """Allocate a Ready machine to us (it becomes Allocated); MAAS refuses (409) a machine
        in any other status. A Ready machine to be wiped is allocated, then released with
        erase."""

    def deploy(self, system_id: str, distro_series: str, hwe_kernel: str | None = None,
               user_data: str | None = None) -> Machine:
        """Start deploying an Allocated machine with this image (and kernel, and base64
        cloud-init user data)."""

    def release(self, system_id: str, erase: str | None) -> Machine:
        """Release; `erase` None (no erase), 'secure', 'quick' or 'zero'. MAAS erases only a
        machine it releases (Allocated, Deployed, Failed ...): a Ready or Releasing machine is
        answered as it is, nothing erased; other statuses are refused (409)."""

    def delete_machine(self, system_id: str) -> None:
        """Remove the machine from MAAS (absent already is fine)."""


class MaasResults(Protocol):
    def commissioning_results(self, system_id: str) -> list[ScriptResult]:
        """The machine's commissioning script results (MAAS keeps its last commissioning's)."""


class StorageInterface(Protocol):
    """A machine's disk layout as the provisioner records it (no byte on a disk changes)."""

    def block_devices(self, system_id: str) -> list[BlockDevice]:
        """The machine's physical disks with their partitions."""

    def create_partition(self, system_id: str, device_id: int, size: int | None) -> int:
        """Add a partition (size None: the rest of the disk); returns its id."""

    def format_partition(self, system_id: str, device_id: int, part_id: int, fstype: str,
                         mount_point: str | None) -> None:
        """Put a filesystem on a partition and mount it."""

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        """Remove a partition."""

    def unformat_device(self, system_id: str, device_id: int) -> None:
        """Remove the filesystem of a whole disk."""


class SiteInterface(Protocol):
    """The provisioner as a whole: reachable, its tags and its settings."""

    def check(self) -> str:
        """Reachable and authorised? Returns a short description (raises otherwise)."""

    def tags(self) -> list[str]:
        """Names of the tags MAAS has."""

    def create_tag(self, name: str, comment: str) -> None:
        """Create a tag (an existing one is fine)."""

    def tag_machine(self, tag: str, system_id: str) -> None:
        """Attach a tag to a machine."""

    def delete_tag(self, name: str) -> None:
        """Delete a tag (and so take it off every machine); an unknown one is fine."""

    def get_config(self, name: str) -> str | None:
        """A MAAS configuration value."""

    def set_config(self, name: str, value: str) -> None:
        """Set a MAAS configuration value."""


class Provisioner(MachinesInterface, StorageInterface, SiteInterface, Protocol):
    """A whole provisioner (MAAS, Ironic): what the wiring hands out, one interface to each
    consumer."""


class PowerInterface(Protocol):
    """A node's power at its BMC (Ironic's PowerInterface). Requests do not wait."""

    def power_state(self, bmc: BmcAccess) -> str:
        """'on' or 'off'."""

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        """Request power off: graceful (OS shutdown) or forced."""

    def power_on(self, bmc: BmcAccess) -> None:
        """Request power on."""

    def power_cycle(self, bmc: BmcAccess) -> None:
        """Reboot: reset a node that is on, power on one that is off."""


class BootInterface(Protocol):
    """A node's next boot device (Ironic's management interface, set_boot_device)."""

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        """Boot from the network next time (a one-time boot override)."""


class EraseInterface(Protocol):
    """Erasing a node's drives one by one at its BMC (Redfish Drive.SecureErase)."""

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        """Drives whose BMC offers Drive.SecureErase: device name → drive handle."""

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        """Start a secure erase of one drive (a handle from `erasable_drives`); returns the
        BMC task that performs it (follow it with `erase_status`)."""

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        """Where the erase task stands: running, completed or failed."""

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        """The BMC task of an erase of this drive the BMC runs or ran (asked by a worker
        that died before saving the answer), or None when the BMC knows of none."""


class OobDriver(PowerInterface, BootInterface, EraseInterface, Protocol):
    """A node's whole BMC (Redfish, IPMI, the fake): what the wiring hands out, one interface
    to each consumer."""


class RoutedOob:
    """An OobDriver passing each call to the driver `_pick` chooses for the node."""

    def _pick(self, bmc: BmcAccess) -> OobDriver:
        raise NotImplementedError

    def power_state(self, bmc: BmcAccess) -> str:
        return self._pick(bmc).power_state(bmc)

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        self._pick(bmc).power_off(bmc, graceful=graceful)

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        return self._pick(bmc).erasable_drives(bmc)

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        return self._pick(bmc).secure_erase(bmc, drive)

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        return self._pick(bmc).erase_status(bmc, task)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        return self._pick(bmc).find_erase(bmc, drive)

    def power_on(self, bmc: BmcAccess) -> None:
        self._pick(bmc).power_on(bmc)

    def power_cycle(self, bmc: BmcAccess) -> None:
        self._pick(bmc).power_cycle(bmc)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        self._pick(bmc).set_pxe_boot(bmc)


class OobRouter(RoutedOob):
    """An OobDriver choosing the Redfish or IPMI driver by the node's `oob.type`."""

    def __init__(self, drivers: dict[str, OobDriver]) -> None:
        self._drivers = drivers

    def _pick(self, bmc: BmcAccess) -> OobDriver:
        try:
            return self._drivers[bmc.type]
        except KeyError:
            raise OobError(f"No driver for oob type {bmc.type}") from None
