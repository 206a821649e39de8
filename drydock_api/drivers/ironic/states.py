"""Ironic's provision and power states as Drydock reads them, and what each means to a wait."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from common.jsontypes import JSONObject

if TYPE_CHECKING:  # openstacksdk is slow to import: only where Ironic is the provisioner
    from openstack.baremetal.v1.node import Node

# Provision states (ironic/common/states.py; the API's lower-case names).
ENROLL, VERIFYING, MANAGEABLE, AVAILABLE = "enroll", "verifying", "manageable", "available"
ACTIVE, DEPLOYING, DEPLOY_WAIT = "active", "deploying", "wait call-back"
DELETING, CLEANING, CLEAN_WAIT = "deleting", "cleaning", "clean wait"
DEPLOY_FAILED, CLEAN_FAILED = "deploy failed", "clean failed"
INSPECT_FAILED, ERROR = "inspect failed", "error"
# Failure states: Ironic stopped, `last_error` says why; nothing moves without an operator.
FAILED = frozenset({DEPLOY_FAILED, CLEAN_FAILED, INSPECT_FAILED, ERROR, "rescue failed",
                    "unrescue failed", "adopt failed", "service failed"})
# A failed verification (`manage`: Ironic checks the BMC's credentials and reads its power)
# returns the node to `enroll` with last_error, not to a failure state
# (ironic/common/state_machine.py: verifying --fail--> enroll).
FALLS_BACK_TO = {MANAGEABLE: ENROLL}
# `*-wait` states: Ironic waits for something outside it (an agent call-back, a BMC job).
WAITING = frozenset({DEPLOY_WAIT, CLEAN_WAIT, "inspect wait", "rescue wait", "service wait"})
POWER_ON, POWER_OFF, SOFT_POWER_OFF = "power on", "power off", "soft power off"
REBOOT, SOFT_REBOOT = "rebooting", "soft rebooting"

# Ironic states as MAAS status names, for the Provisioner port's Machine (its callers know those).
AS_MAAS_STATUS = {
    ENROLL: "New", VERIFYING: "Commissioning", MANAGEABLE: "New", "inspecting": "Commissioning",
    "inspect wait": "Commissioning",
    AVAILABLE: "Ready", DEPLOYING: "Deploying", DEPLOY_WAIT: "Deploying", ACTIVE: "Deployed",
    DELETING: "Releasing", CLEANING: "Releasing", CLEAN_WAIT: "Releasing",
    DEPLOY_FAILED: "Failed deployment", CLEAN_FAILED: "Failed releasing",
    INSPECT_FAILED: "Failed commissioning", ERROR: "Failed releasing",
}


# The keys of a node's driver_info that say where its BMC is (no credentials).
BMC_KEYS = ("redfish_address", "redfish_system_id", "ipmi_address", "ipmi_port")


@dataclass(frozen=True)
class IronicNode:
    """An Ironic node as Drydock needs it (no credentials: of driver_info only the BMC's
    address is kept, `bmc`)."""

    uuid: str
    name: str
    provision_state: str
    target_provision_state: str | None = None
    power_state: str | None = None
    target_power_state: str | None = None
    maintenance: bool = False
    maintenance_reason: str | None = None
    last_error: str | None = None
    retired: bool = False
    retired_reason: str | None = None
    driver: str = ""
    deploy_interface: str = ""
    inspect_interface: str = ""
    instance_uuid: str | None = None
    automated_clean: bool | None = None
    reservation: str | None = None
    has_agent_ramdisk: bool = False
    extra: JSONObject = field(default_factory=dict, repr=False)
    bmc: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def failed(self) -> bool:
        return self.provision_state in FAILED

    def cause(self) -> str:
        """Ironic's own account of where the node stands, for an error message."""
        parts = [f"provision_state {self.provision_state!r}"]
        if self.target_provision_state:
            parts.append(f"target {self.target_provision_state!r}")
        if self.maintenance:
            parts.append(f"in maintenance ({self.maintenance_reason or 'no reason given'})")
        if self.last_error:
            parts.append(f"last_error: {self.last_error}")
        return ", ".join(parts)

    @property
    def maas_status(self) -> str:
        if self.maintenance:
            return "Broken"
        if self.provision_state == AVAILABLE and self.instance_uuid:
            return "Allocated"
        return AS_MAAS_STATUS.get(self.provision_state, self.provision_state)


def from_sdk(node: Node) -> IronicNode:
    """An openstacksdk baremetal Node → IronicNode."""
    info = dict(node.driver_info or {})
    return IronicNode(
        uuid=str(node.id), name=str(node.name or node.id),
        provision_state=str(node.provision_state),
        target_provision_state=node.target_provision_state,
        power_state=node.power_state, target_power_state=node.target_power_state,
        maintenance=bool(node.is_maintenance), maintenance_reason=node.maintenance_reason,
        last_error=node.last_error, retired=bool(node.is_retired),
        retired_reason=node.retired_reason, driver=str(node.driver or ""),
        deploy_interface=str(node.deploy_interface or ""),
        inspect_interface=str(node.inspect_interface or ""), instance_uuid=node.instance_id,
        automated_clean=node.is_automated_clean_enabled, reservation=node.reservation,
        has_agent_ramdisk=bool(info.get("deploy_ramdisk") and info.get("deploy_kernel")),
        extra=dict(node.extra or {}),
        bmc={k: str(info[k]) for k in BMC_KEYS if info.get(k) is not None})
