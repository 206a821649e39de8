"""What a MAAS machine's operations do to its disks: deploy writes the layout, release erases.

Kept apart from the machine store so the disk rules (as FIELD_NOTES describe real MAAS) read
in one place: storage edits change only MAAS's records; curtin overwrites at deploy exactly the
disks the layout uses, then cloud-init mounts what the user data names; an erase covers every
disk, secure where the drive can, else quick or zeroing.
"""

from __future__ import annotations

import base64

import yaml

from sitesim.maas.records import Machine
from sitesim.model import SiteModel


class UserDataError(ValueError):
    """User data MAAS would refuse."""


def apply_layout(model: SiteModel, machine: Machine) -> None:
    """curtin at deploy: every disk the layout uses (partitions or a filesystem) is
    overwritten; disks it does not use keep their bytes. cloud-init then mounts what the
    user data names. A machine without a root filesystem gets MAAS's flat layout."""
    name, node = machine.hostname, model.node(machine.hostname)
    mounts: dict[str, dict[str, str]] = {}
    has_root = False
    for device in machine.block_devices:
        if not (device.partitions or device.fstype):
            continue
        if any(p.mount_point == "/" for p in device.partitions):
            has_root = True
            model.write_os_marker(name) if device.name == node.os_disk \
                else model.write_disk(name, device.name)
        else:
            model.write_disk(name, device.name)
        for part in device.partitions:
            if part.mount_point:
                mounts[part.mount_point] = {"disk": device.name, "by": "curtin (new)"}
    if not has_root:
        model.write_os_marker(name)
        mounts["/"] = {"disk": node.os_disk, "by": "curtin (new, flat layout)"}
    for device_path, mount_point in mounts_from_user_data(machine.user_data):
        disk = device_path.removeprefix("/dev/").rstrip("0123456789")
        state = node.disks.get(disk)
        found = state is not None and state.marker is not None
        mounts[mount_point] = {"disk": disk, "by": "cloud-init (existing filesystem)"
                               if found else "cloud-init: no filesystem found, not mounted"}
    model.set_mounts(name, mounts)

def erase_disks(model: SiteModel, machine: Machine) -> None:
    """MAAS's erase covers every disk: secure erase where the drive can (else quick erase
    when also asked, else zeroing), quick erase (signatures and 2 MiB at each end), or
    zeroing the whole disk."""
    secure, quick = machine.erase_mode or (False, False)
    spec = {d.name: d for d in model.spec.node(machine.hostname).disks}
    for disk in model.node(machine.hostname).disks:
        if secure and spec[disk].secure_erase:
            method = "maas secure_erase"
        elif secure:
            method = ("maas quick_erase (secure erase unsupported)" if quick
                      else "maas erase: zeroed (secure erase unsupported)")
        elif quick:
            method = "maas quick_erase"
        else:
            method = "maas erase: zeroed"
        model.wipe_disk(machine.hostname, disk, method)
    machine.erase_mode = None


def mounts_from_user_data(user_data: str) -> list[tuple[str, str]]:
    """(device, mount point) of a base64 #cloud-config's `mounts` (UserDataError when
    unreadable)."""
    if not user_data:
        return []
    try:
        text = base64.b64decode(user_data, validate=True).decode()
        config = yaml.safe_load(text) if text.startswith("#cloud-config") else {}
    except (ValueError, yaml.YAMLError) as exc:
        raise UserDataError(f"Invalid user data: {exc}") from exc
    out = []
    for entry in (config or {}).get("mounts") or []:
        if isinstance(entry, list) and len(entry) >= 2:
            out.append((str(entry[0]), str(entry[1])))
    return out
