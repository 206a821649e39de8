"""An Ironic site's nodes in its real Ironic, as the site YAML has them: enrolled with their BMC
(redfish against the site's sushy-tools, ipmi against its IPMI BMCs), a port for the boot MAC,
and brought to the provision state matching `state` (deployed → adopted `active`, ready →
`available`, new → `manageable`; absent nodes are not enrolled)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests

from sitesim.ironic.server import API_VERSION
from sitesim.siteconfig import NodeSpec

HEADERS = {"X-OpenStack-Ironic-API-Version": API_VERSION}
TARGETS = {"deployed": "active", "ready": "available", "new": "manageable"}
VERIFY_ATTEMPTS = 3


def driver_fields(node: NodeSpec, bmc: Mapping[str, Any]) -> dict[str, Any]:
    if node.bmc.type == "redfish":
        return {"driver": "redfish", "power_interface": "redfish",
                "management_interface": "redfish", "inspect_interface": "redfish",
                "driver_info": {"redfish_address": f"http://127.0.0.1:{bmc['port']}",
                                "redfish_system_id": f"/redfish/v1/Systems/{bmc['system_id']}",
                                "redfish_username": node.bmc.user,
                                "redfish_password": node.bmc.password}}
    return {"driver": "ipmi", "power_interface": "ipmitool", "management_interface": "ipmitool",
            "driver_info": {"ipmi_address": "127.0.0.1", "ipmi_port": bmc["port"],
                            "ipmi_username": node.bmc.user, "ipmi_password": node.bmc.password,
                            "ipmi_cipher_suite": 3}}


class IronicEnroller:
    """Plain REST calls (sitesim reaches Drydock's side only over HTTP, never its code)."""

    def __init__(self, url: str, boot_files: Mapping[str, str], timeout: float = 300.0) -> None:
        self.url, self.boot_files, self.timeout = f"{url}/v1", dict(boot_files), timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        resp = requests.request(method, f"{self.url}{path}", json=body, headers=HEADERS,
                                timeout=30)
        if resp.status_code >= 400:
            raise RuntimeError(f"Ironic {method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp.json() if resp.content else None

    def enroll(self, node: NodeSpec, bmc: Mapping[str, Any]) -> None:
        target = TARGETS.get(node.state)
        if target is None:
            return
        self._call("POST", "/nodes", {
            "name": node.name, **driver_fields(node, bmc), "boot_interface": "ipxe",
            "deploy_interface": "ramdisk", "network_interface": "noop",
            "automated_clean": False, "instance_info": dict(self.boot_files)})
        uuid = self._call("GET", f"/nodes/{node.name}")["uuid"]
        self._call("POST", "/ports", {"node_uuid": uuid, "address": node.mac})
        self._provision(node.name, "manage", "manageable")
        if target == "available":
            self._provision(node.name, "provide", "available")
        elif target == "active":
            self._provision(node.name, "adopt", "active")  # running already: no deploy

    def _provision(self, name: str, verb: str, reach: str) -> None:
        # A failed `manage` (Ironic could not read the BMC's power, as when ipmitool times out
        # on a loaded machine) returns the node to `enroll`: asked again, a bounded number of
        # times.
        attempts = VERIFY_ATTEMPTS if verb == "manage" else 1
        for _ in range(attempts):
            self._call("PUT", f"/nodes/{name}/states/provision", {"target": verb})
            node = self._wait(name, reach)
            if node["provision_state"] == reach:
                return
        raise RuntimeError(f"Ironic: {name} {verb} failed ({attempts} attempts), "
                           f"{node['provision_state']}: {node['last_error']}")

    def _wait(self, name: str, reach: str) -> Any:
        """The node once it rests: in `reach`, a failure state or back where it was."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            node = self._call("GET", f"/nodes/{name}")
            state = node["provision_state"]
            if not node["target_provision_state"] and (
                    state in (reach, "enroll") or state.endswith("failed")):
                return node
            time.sleep(0.3)
        raise RuntimeError(f"Ironic: {name} did not reach {reach} in {self.timeout:.0f}s")
