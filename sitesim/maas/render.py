"""JSON shapes of MAAS 2.0 objects (machines, block devices, partitions)."""

from __future__ import annotations

from typing import Any

from sitesim.maas.records import BlockDevice, Machine, Partition

API = "/MAAS/api/2.0"


def machine_json(machine: Machine, power_on: bool) -> dict[str, Any]:
    devices = [block_device_json(machine, d) for d in machine.block_devices]
    boot = {"id": 1, "name": "eth0", "mac_address": machine.mac, "type": "physical",
            "enabled": True, "links": []}
    return {
        "system_id": machine.system_id,
        "hostname": machine.hostname,
        "fqdn": f"{machine.hostname}.maas",
        "domain": {"id": 0, "name": "maas"},
        "description": machine.description,
        "status": machine.status.code,
        "status_name": machine.status.label,
        "status_message": machine.status.label,
        "power_state": "on" if power_on else "off",
        "power_type": machine.power_type,
        "architecture": "amd64/generic",
        "cpu_count": 8,
        "memory": 32768,
        "osystem": "ubuntu" if machine.distro_series else "",
        "distro_series": machine.distro_series,
        "owner": machine.owner,
        "tag_names": list(machine.tags),
        "zone": {"id": 1, "name": "default"},
        "pool": {"id": 0, "name": "default"},
        "node_type": 0,
        "node_type_name": "Machine",
        "locked": False,
        "netboot": machine.status.label != "Deployed",
        "boot_interface": boot,
        "interface_set": [boot],
        "ip_addresses": [],
        "storage_layout": machine.storage_layout,
        "blockdevice_set": devices,
        "physicalblockdevice_set": devices,
        "boot_disk": devices[0] if devices else None,
        "resource_uri": f"{API}/machines/{machine.system_id}/",
    }


def block_device_json(machine: Machine, device: BlockDevice) -> dict[str, Any]:
    used = sum(p.size for p in device.partitions)
    return {
        "id": device.id,
        "system_id": machine.system_id,
        "name": device.name,
        "path": f"/dev/disk/by-dname/{device.name}",
        "id_path": f"/dev/disk/by-id/wwn-sitesim-{machine.hostname}-{device.name}",
        "type": "physical",
        "model": "SITESIM DISK",
        "serial": f"{machine.system_id}-{device.name}",
        "size": device.size,
        "block_size": 512,
        "available_size": device.size - used,
        "used_size": used,
        "used_for": "GPT partitioned" if device.partitions else
                    (f"Unmounted {device.fstype} formatted filesystem" if device.fstype
                     else "Unused"),
        "partition_table_type": "GPT" if device.partitions else None,
        "tags": ["ssd"],
        "filesystem": {"fstype": device.fstype, "mount_point": None,
                       "label": None} if device.fstype else None,
        "partitions": [partition_json(machine, device, p) for p in device.partitions],
        "resource_uri": f"{API}/nodes/{machine.system_id}/blockdevices/{device.id}/",
    }


def partition_json(machine: Machine, device: BlockDevice, part: Partition) -> dict[str, Any]:
    return {
        "id": part.id,
        "uuid": f"{machine.system_id}-{device.id}-{part.id}",
        "type": "partition",
        "path": f"/dev/disk/by-dname/{device.name}-part{part.id}",
        "size": part.size,
        "bootable": False,
        "device_id": device.id,
        "system_id": machine.system_id,
        "used_for": f"{part.fstype} formatted filesystem" if part.fstype else "Unused",
        "filesystem": {"fstype": part.fstype, "mount_point": part.mount_point,
                       "label": None} if part.fstype else None,
        "resource_uri": (f"{API}/nodes/{machine.system_id}/blockdevices/{device.id}"
                         f"/partition/{part.id}"),
    }
