"""MAAS node statuses (codes and names as MAAS 2.x) and the table of machine operations."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Status(enum.Enum):
    """Value = (numeric code, status_name) exactly as MAAS reports them."""

    NEW = (0, "New")
    COMMISSIONING = (1, "Commissioning")
    FAILED_COMMISSIONING = (2, "Failed commissioning")
    READY = (4, "Ready")
    DEPLOYED = (6, "Deployed")
    DEPLOYING = (9, "Deploying")
    ALLOCATED = (10, "Allocated")
    FAILED_DEPLOYMENT = (11, "Failed deployment")
    RELEASING = (12, "Releasing")
    FAILED_RELEASING = (13, "Failed releasing")
    DISK_ERASING = (14, "Disk erasing")
    FAILED_DISK_ERASING = (15, "Failed disk erasing")

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def label(self) -> str:
        return self.value[1]


@dataclass(frozen=True)
class Operation:
    """One machine operation: where it may start, where it passes, where it ends."""

    name: str
    allowed_from: frozenset[Status]
    transitional: Status | None
    success: Status
    failure: Status | None
    fault: str | None
    duration: str | None


_FAILED = frozenset({Status.FAILED_COMMISSIONING, Status.FAILED_DEPLOYMENT,
                     Status.FAILED_RELEASING, Status.FAILED_DISK_ERASING})

OPERATIONS: dict[str, Operation] = {
    op.name: op for op in (
        Operation("commission",
                  frozenset({Status.NEW, Status.READY, Status.FAILED_COMMISSIONING,
                             Status.FAILED_DEPLOYMENT}),
                  Status.COMMISSIONING, Status.READY, Status.FAILED_COMMISSIONING,
                  "maas.commission", "commission"),
        Operation("allocate", frozenset({Status.READY}), None, Status.ALLOCATED, None,
                  None, None),
        Operation("deploy", frozenset({Status.READY, Status.ALLOCATED}),
                  Status.DEPLOYING, Status.DEPLOYED, Status.FAILED_DEPLOYMENT,
                  "maas.deploy", "deploy"),
        Operation("release",
                  frozenset({Status.ALLOCATED, Status.DEPLOYED, Status.DEPLOYING} | _FAILED
                            - {Status.FAILED_COMMISSIONING}),
                  Status.RELEASING, Status.READY, Status.FAILED_RELEASING,
                  "maas.release", "release"),
        Operation("erase", frozenset({Status.RELEASING}), Status.DISK_ERASING, Status.READY,
                  Status.FAILED_DISK_ERASING, "maas.release", "erase"),
    )
}

# Statuses in which MAAS lets storage be edited (format, unformat, delete, layout).
STORAGE_EDITABLE = frozenset({Status.READY, Status.ALLOCATED})


def by_name(name: str) -> Status:
    for status in Status:
        if status.label == name or status.name == name.upper():
            return status
    raise KeyError(name)
