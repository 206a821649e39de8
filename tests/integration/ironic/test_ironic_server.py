"""The site's real Ironic starts standalone (no auth, no message bus, SQLite) and offers the
hardware types and interfaces Drydock's Ironic provisioner enrolls nodes with."""

from __future__ import annotations

import requests

from sitesim.ironic.server import API_VERSION, ENABLED, IronicServer


def test_ironic_answers_without_auth_with_the_hardware_types(ironic_server: IronicServer) -> None:
    root = requests.get(f"{ironic_server.url}/v1", timeout=5)
    assert root.status_code == 200
    newest = root.json()["version"]["version"]
    assert tuple(map(int, newest.split("."))) >= tuple(map(int, API_VERSION.split(".")))
    drivers = requests.get(f"{ironic_server.url}/v1/drivers", timeout=5).json()["drivers"]
    assert {"redfish", "ipmi"} <= {d["name"] for d in drivers}
    detail = requests.get(f"{ironic_server.url}/v1/drivers/redfish",
                          headers={"X-OpenStack-Ironic-API-Version": API_VERSION},
                          timeout=5).json()
    assert "redfish" in detail["enabled_power_interfaces"]
    assert set(ENABLED["deploy_interfaces"].split(",")) & set(detail["enabled_deploy_interfaces"])


def test_a_node_can_be_enrolled_and_read_back(ironic_server: IronicServer) -> None:
    headers = {"X-OpenStack-Ironic-API-Version": API_VERSION}
    made = requests.post(f"{ironic_server.url}/v1/nodes", headers=headers, timeout=10,
                         json={"name": "smoke-node", "driver": "fake-hardware"})
    assert made.status_code == 201, made.text
    try:
        got = requests.get(f"{ironic_server.url}/v1/nodes/smoke-node", headers=headers,
                           timeout=5).json()
        assert got["provision_state"] == "enroll"
        assert got["retired"] is False
    finally:
        requests.delete(f"{ironic_server.url}/v1/nodes/smoke-node", headers=headers, timeout=10)
