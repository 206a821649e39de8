"""What Drydock's Redfish driver reads, sets and calls on a BMC, as one list: the
interoperability profile (etc/redfish/drydock-profile.json) must state every entry, and a
test runs the driver against a BMC to hold the list to what the driver really sends."""

from __future__ import annotations

from dataclasses import dataclass

import sushy

# The reset types the driver sends (power_off graceful/forced, power_on, power_cycle of a
# running node) and the boot override it sets before a deploy.
RESET_TYPES = (sushy.RESET_GRACEFUL_SHUTDOWN.value, sushy.RESET_FORCE_OFF.value,
               sushy.RESET_ON.value, sushy.RESET_FORCE_RESTART.value)
BOOT_TARGET = sushy.BOOT_SOURCE_TARGET_PXE.value
BOOT_ENABLED = sushy.BOOT_SOURCE_ENABLED_ONCE.value


@dataclass(frozen=True)
class Use:
    """One thing Drydock relies on: a property (a path of names inside the resource, such
    as `Boot/BootSourceOverrideTarget`) or an action (`#Drive.SecureErase`) of a resource
    type, the values it sends or reads there, and whether it cannot do without it
    (`required`: the profile must make it, and its resource, Mandatory)."""

    resource: str
    path: str
    values: tuple[str, ...] = ()
    required: bool = True

    @property
    def is_action(self) -> bool:
        return self.path.startswith("#")


USES: tuple[Use, ...] = (
    Use("ServiceRoot", "Id"),                      # sushy refuses a root without it
    Use("ServiceRoot", "Systems"),
    Use("ServiceRoot", "TaskService", required=False),  # lost erase tasks are looked up
    Use("ComputerSystemCollection", "Members"),    # the first System, when none is named
    Use("ComputerSystem", "Id"),
    Use("ComputerSystem", "PowerState", ("On", "Off")),
    Use("ComputerSystem", "Boot/BootSourceOverrideTarget", (BOOT_TARGET,)),
    Use("ComputerSystem", "Boot/BootSourceOverrideEnabled", (BOOT_ENABLED,)),
    # cleared (set to null) with the PXE override where the BMC shows it (sushy does)
    Use("ComputerSystem", "Boot/HttpBootUri", required=False),
    Use("ComputerSystem", "#ComputerSystem.Reset", RESET_TYPES),
    Use("ComputerSystem", "Storage"),
    Use("StorageCollection", "Members"),
    Use("Storage", "Drives"),
    Use("Drive", "Id"),
    Use("Drive", "Name", required=False),
    Use("Drive", "Operations/AssociatedTask", required=False),
    Use("Drive", "#Drive.SecureErase"),
    Use("TaskService", "Tasks", required=False),
    Use("TaskCollection", "Members", required=False),
    Use("Task", "TaskState", required=False),
    Use("Task", "TaskStatus", required=False),
    Use("Task", "Messages/Message", required=False),
    Use("Task", "Payload/TargetUri", required=False),
)
