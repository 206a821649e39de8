"""Ironic behind Drydock's Provisioner and OobDriver ports, so the steps (and Shipyard and
Promenade above them) work on an Ironic site unchanged: Ironic's states are read as the MAAS
statuses the steps know, and power goes through Ironic to the node's BMC."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from common.jsontypes import as_int, as_list, as_object, member
from drydock_api.drivers.ironic import states as st
from drydock_api.drivers.ironic.client import IronicClient, IronicRefused
from drydock_api.drivers.ironic.states import IronicNode
from drydock_api.drivers.ports import (
    BlockDevice,
    BmcAccess,
    EraseInterface,
    EraseStatus,
    Machine,
    OobError,
)

# MAAS erase modes → Ironic's: both secure and zero are a full erase, quick only the metadata.
ERASE_MODES = {"secure": "full", "zero": "full", "quick": "os-disk"}


def boot_arguments(tags: list[str], user_data: str | None) -> str:
    """The kernel arguments a deployed node boots with: its tags and its (base64) user data,
    as MAAS hands them to a machine it deploys."""
    args = [f"berth.tags={','.join(tags)}"] if tags else []
    return " ".join(args + ([f"berth.user_data={user_data}"] if user_data else []))


def to_machine(node: IronicNode) -> Machine:
    power = {st.POWER_ON: "on", st.POWER_OFF: "off"}.get(node.power_state or "")
    return Machine(system_id=node.uuid, hostname=node.name, status_name=node.maas_status,
                   power_state=power, status_message=node.last_error)


class IronicProvisioner:
    """The Provisioner port on Ironic. A MAAS system_id is Ironic's node UUID."""

    def __init__(self, client: IronicClient) -> None:
        self.client = client

    def _name(self, system_id: str) -> str:
        return system_id  # Ironic takes the UUID wherever a name is accepted

    def find_machine(self, hostname: str) -> Machine | None:
        node = self.client.node(hostname)
        return to_machine(node) if node else None

    def list_machines(self) -> list[Machine]:
        return [to_machine(n) for n in self.client.nodes()]

    def release(self, system_id: str, erase: str | None) -> Machine:
        """Undeploy (active) with the erase asked for, or clean an idle node; the reservation
        (instance_uuid) is dropped. Refused before any change when the node cannot erase."""
        node = self.client.get(system_id)
        if node.provision_state in (st.DELETING, st.CLEANING, st.CLEAN_WAIT):
            return to_machine(node)
        if node.instance_uuid and node.provision_state == st.AVAILABLE:
            node = self.client.set_instance(system_id, None)
        mode = ERASE_MODES.get(erase or "") if erase else None
        if erase and mode is None:
            raise IronicRefused(f"erase {erase!r}: Ironic knows secure, zero and quick")
        if node.provision_state == st.AVAILABLE and mode is None:
            return to_machine(node)
        return to_machine(self.client.undeploy(system_id, mode, wait=False))

    def delete_machine(self, system_id: str) -> None:
        """Ironic discovers no machine by itself (MAAS enlists one that PXE boots), and the
        port carries no BMC credentials to enroll it again: a torn-down node stays enrolled,
        `manageable`, unreserved, until prepare_nodes provides it again."""
        node = self.client.node(system_id)
        if node is None:
            return
        if node.instance_uuid:
            node = self.client.set_instance(system_id, None)
        if node.provision_state == st.AVAILABLE:
            self.client.manage(system_id)

    def check(self) -> str:
        return self.client.check()

    def find_by_mac(self, mac: str) -> Machine | None:
        answer = self.client._request("GET", f"/ports?address={mac}&fields=node_uuid")
        ports = as_list(as_object(answer)["ports"])
        return to_machine(self.client.get(str(member(ports[0], "node_uuid")))) if ports else None

    def rename(self, system_id: str, hostname: str) -> Machine:
        self.client._request("PATCH", f"/nodes/{system_id}",
                             [{"op": "replace", "path": "/name", "value": hostname}])
        return to_machine(self.client.get(system_id))

    def commission(self, system_id: str) -> Machine:
        """enroll → manageable (Ironic verifies the BMC) → inspect (where the node has an
        inspect interface: its disks come from there, as MAAS's commissioning finds a
        machine's disks) → provide → available, waited for: Ironic's cleaning on the way
        reads as MAAS's Releasing, which a commissioning caller would not expect."""
        node = self.client.manage(system_id)
        if node.inspect_interface not in ("", "no-inspect"):
            self.client.inspect(system_id)
        return to_machine(self.client.provide(system_id))

    def allocate(self, system_id: str) -> Machine:
        node = self.client.get(system_id)
        if node.provision_state != st.AVAILABLE:
            raise IronicRefused(f"{node.name}: only an available node can be reserved "
                                f"({node.cause()})")
        return to_machine(self.client.set_instance(system_id, str(uuid.uuid4())))

    def deploy(self, system_id: str, distro_series: str, hwe_kernel: str | None = None,
               user_data: str | None = None) -> Machine:
        """The ramdisk deploy: Ironic boots the configured kernel and ramdisk (no image is
        written; `distro_series` is kept in the node's `extra` for the operator). What MAAS
        hands a machine in its tags and cloud-init user data (the boot action key and
        Drydock's boot action API) reaches the booted host on its kernel command line
        (`instance_info/ramdisk_kernel_arguments`, written into the iPXE script): the ramdisk
        deploy ignores a config drive."""
        # Ironic empties instance_info at undeploy: the boot files are given at each deploy.
        boot = [{"op": "add", "path": f"/instance_info/{key}", "value": url}
                for key, url in self.client._boot_files().items()]
        self.client._request("PATCH", f"/nodes/{system_id}", [
            {"op": "add", "path": "/extra/distro_series", "value": distro_series},
            {"op": "add", "path": "/instance_info/ramdisk_kernel_arguments",
             "value": boot_arguments(self._tags_of(system_id), user_data)}, *boot])
        return to_machine(self.client.deploy(system_id, wait=False))

    def block_devices(self, system_id: str) -> list[BlockDevice]:
        """The disks of the node's hardware inventory, stored by Ironic's last inspection
        (`GET /v1/nodes/{node}/inventory`, its `disks`). A node never inspected has none to
        report: refused with that cause, never read as a machine without disks."""
        inventory = self.client.inventory(system_id)
        if inventory is None:
            node = self.client.get(system_id)
            raise IronicRefused(
                f"Ironic has no hardware inventory for {node.name}: it was never inspected "
                f"(inspect interface {node.inspect_interface or 'none'}), so its disks are "
                "unknown. Inspect it (redfish inspection) or commission it again")
        disks = [as_object(d) for d in as_list(inventory.get("disks"))]
        return [BlockDevice(id=index, name=str(disk.get("name")),
                            size=as_int(disk.get("size") or 0))
                for index, disk in enumerate(disks, start=1) if disk.get("name")]

    # Ironic keeps no storage layout or settings for Drydock: these are accepted and change
    # nothing (the ramdisk deploy writes no disk).
    def create_partition(self, system_id: str, device_id: int, size: int | None) -> int:
        return 0

    def format_partition(self, system_id: str, device_id: int, part_id: int, fstype: str,
                         mount_point: str | None) -> None:
        return None

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        return None

    def unformat_device(self, system_id: str, device_id: int) -> None:
        return None

    # Tags (the boot action key's carrier): Ironic has no tag registry; a tag lives in the
    # node's free-form `extra/tags` list, and exists while a node carries it.
    def _tags_of(self, system_id: str) -> list[str]:
        tags = self.client.get(system_id).extra.get("tags")
        return [str(t) for t in tags] if isinstance(tags, list) else []

    def _set_tags(self, system_id: str, tags: list[str]) -> None:
        self.client._request("PATCH", f"/nodes/{system_id}",
                             [{"op": "add", "path": "/extra/tags", "value": [*tags]}])

    def tags(self) -> list[str]:
        found: set[str] = set()
        for node in self.client.nodes():
            tags = node.extra.get("tags")
            if isinstance(tags, list):
                found.update(str(t) for t in tags)
        return sorted(found)

    def create_tag(self, name: str, comment: str) -> None:
        return None

    def tag_machine(self, tag: str, system_id: str) -> None:
        tags = self._tags_of(system_id)
        if tag not in tags:
            self._set_tags(system_id, tags + [tag])

    def delete_tag(self, name: str) -> None:
        for node in self.client.nodes():
            tags = node.extra.get("tags")
            if isinstance(tags, list) and name in tags:
                self._set_tags(node.uuid, [str(t) for t in tags if t != name])

    def get_config(self, name: str) -> str | None:
        return None

    # Retirement (spec 003) is Ironic's own: Drydock's retire and unretire set its fields.
    def retire(self, hostname: str, reason: str | None) -> None:
        """PATCH retired true and retired_reason; Ironic refuses (409) an available node,
        which stays as it was."""
        self.client.retire(hostname, reason)

    def unretire(self, hostname: str) -> None:
        """PATCH retired false, retired_reason removed."""
        self.client.unretire(hostname)

    def set_config(self, name: str, value: str) -> None:
        return None


class IronicOob:
    """The OobDriver port through Ironic: the node whose driver_info names this BMC is powered
    with Ironic's power states; disk erase stays with the BMC (`direct`)."""

    def __init__(self, client: IronicClient, direct: EraseInterface) -> None:
        self.client, self.direct = client, direct

    def _node(self, bmc: BmcAccess) -> IronicNode:
        """The node whose BMC this is, from one listing of Ironic's nodes (with their
        driver_info), not one read per node."""
        for node in self.client.nodes():
            if _same_bmc(node.bmc, bmc):
                return node
        raise OobError(f"Ironic has no node with BMC {bmc.describe()}")

    def power_state(self, bmc: BmcAccess) -> str:
        node = self._node(bmc)
        return "on" if node.power_state == st.POWER_ON else "off"

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        target = st.SOFT_POWER_OFF if graceful else st.POWER_OFF
        self.client.power(self._node(bmc).uuid, target, wait=False)

    def power_on(self, bmc: BmcAccess) -> None:
        self.client.power(self._node(bmc).uuid, st.POWER_ON, wait=False)

    def power_cycle(self, bmc: BmcAccess) -> None:
        node = self._node(bmc)
        target = st.REBOOT if node.power_state == st.POWER_ON else st.POWER_ON
        self.client.power(node.uuid, target, wait=False)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        node = self._node(bmc)
        self.client._request("PUT", f"/nodes/{node.uuid}/management/boot_device",
                             {"boot_device": "pxe", "persistent": False})

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        return self.direct.erasable_drives(bmc)

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        return self.direct.secure_erase(bmc, drive)

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        return self.direct.erase_status(bmc, task)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        return self.direct.find_erase(bmc, drive)


def _same_bmc(info: Mapping[str, object], bmc: BmcAccess) -> bool:
    if bmc.type == "redfish":
        system = str(info.get("redfish_system_id", ""))
        return (str(info.get("redfish_address", "")).endswith(f"{bmc.address}:{bmc.port}")
                and bool(bmc.system_id) and system.rstrip("/").endswith(str(bmc.system_id)))
    return (str(info.get("ipmi_address")) == bmc.address
            and int(str(info.get("ipmi_port") or 623)) == bmc.port)
