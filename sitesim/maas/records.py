"""The records MAAS keeps of a machine and its disks (state only; behaviour is in machines
and disks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sitesim.maas.statuses import Status


@dataclass
class Partition:
    id: int
    size: int
    fstype: str | None = None
    mount_point: str | None = None


@dataclass
class BlockDevice:
    id: int
    name: str
    size: int
    partitions: list[Partition] = field(default_factory=list)
    fstype: str | None = None


@dataclass
class Machine:
    system_id: str
    hostname: str
    mac: str
    status: Status
    power_type: str
    power_parameters: dict[str, Any]
    tags: list[str]
    block_devices: list[BlockDevice]
    owner: str | None = None
    storage_layout: str = "flat"
    distro_series: str = ""
    description: str = ""
    generation: int = 0
    next_id: int = 100
    erase_mode: tuple[bool, bool] | None = None   # (secure_erase, quick_erase) when erasing
    user_data: str = ""
