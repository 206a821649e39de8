"""redeploy_server end to end on an Ironic site (etc/sites/ironic-demo.yaml): Shipyard,
Promenade and Drydock under gunicorn, a real Ironic provisioning the site's machines through
their simulated BMCs. The node is drained, powered off through Ironic, its disks wiped at the
BMC, undeployed and removed; prepare_nodes inspects it (Ironic's redfish inspection: its disks
come from Ironic's inventory), deploy_nodes deploys it with the ramdisk deploy, and the host
boots the iPXE script Ironic wrote, finds its boot action key there and rejoins Kubernetes by
Promenade's join script."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.e2e.conftest import create, steps_of
from tests.fixtures.services import Berth, run_berth
from tests.fixtures.site import start_test_site, stop_site

# The timeout counts the module's set-up (the site, Ironic, its enrolment: 200-270 s on a
# loaded 2-core machine) with the redeploy (about 225 s): a guard against hangs only.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
NODE = "node04"  # redfish BMC, compute
# Power goes through Ironic, which runs a soft power off to its end (polling the BMC) before
# it takes another power request: Drydock waits for it longer than on the MAAS test site.
# Drydock reads Ironic's states every 0.2 s (0.5 s in `berth up`'s configuration).
IRONIC_SECTIONS = {"drydock": {
    "oob": {"poll_interval": 0.2, "graceful_timeout": 30, "power_timeout": 60},
    # Ironic's own release (undeploy, then cleaning) ran past 30 s on a loaded 2-core machine
    "steps": {"release_timeout": 180},
    "ironic": {"poll_interval": 0.2}}}
HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}  # 1.81: the node's inventory


@pytest.fixture(scope="module")
def ironic_berth(ironic_installed: None, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Berth]:
    site: Site = start_test_site("etc/sites/ironic-demo.yaml")
    try:
        for berth in run_berth(site, tmp_path_factory, IRONIC_SECTIONS):
            resp = berth.api("POST", f"/revisions/{berth.revision}/tags/site-action-success",
                             json={"dag_id": "bootstrap"})
            assert resp.status_code == 201, resp.text
            yield berth
    finally:
        stop_site(site)


def ironic(berth: Berth, path: str) -> Any:
    resp = requests.get(f"{berth.site.urls['ironic']}/v1{path}", headers=HEADERS, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def drydock(berth: Berth, path: str) -> Any:
    resp = requests.get(f"{berth.procs['drydock'].url}/api/v1.0{path}",
                        headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.json()


def counts(berth: Berth) -> dict[str, int]:
    return {op: berth.calls(system=system, op=op, node=NODE) for system, op in (
        ("redfish", "graceful_shutdown"), ("redfish", "secure_erase"),
        ("kube", "delete_node"), ("host", "ipxe_boot"), ("maas", "release"))}


def test_redeploy_server_on_an_ironic_site_rejoins_the_node(ironic_berth: Berth) -> None:
    berth = ironic_berth
    before = berth.sim(f"/nodes/{NODE}")
    assert before["kubernetes"]["ready"] and ironic(berth, f"/nodes/{NODE}")[
        "provision_state"] == "active"
    calls = counts(berth)
    started = time.monotonic()
    action = create(berth, "redeploy_server", target_nodes=NODE)
    view = berth.wait_action(action["id"], timeout=600)
    took = time.monotonic() - started
    assert view["state"] == "complete", (view["message"], [
        (s["id"], s["state"]) for s in view["steps"] if s["state"] != "success"])
    assert {s["state"] for s in view["steps"]} == {"success"}
    print(f"redeploy_server of {NODE} on the Ironic site: {took:.1f}s")
    after = counts(berth)
    # Powered off through Ironic (soft power off: GracefulShutdown at the BMC), wiped at the
    # BMC (one Drive.SecureErase per disk), the Node deleted, no MAAS call at all, and the
    # host booted Ironic's iPXE script once.
    assert after["graceful_shutdown"] == calls["graceful_shutdown"] + 1
    assert after["secure_erase"] == calls["secure_erase"] + len(before["disks"])
    assert after["delete_node"] == calls["delete_node"] + 1
    assert after["ipxe_boot"] == calls["ipxe_boot"] + 1
    assert after["release"] == calls["release"]
    node = ironic(berth, f"/nodes/{NODE}")
    assert node["provision_state"] == "active" and node["power_state"] == "power on"
    assert node["properties"]["cpu_arch"] == "x86_64"
    assert [t for t in node["extra"]["tags"] if t.startswith(f"{NODE}__baid__")]
    inventory = ironic(berth, f"/nodes/{NODE}/inventory")["inventory"]
    assert sorted(d["name"] for d in inventory["disks"]) == sorted(before["disks"])
    seen = berth.sim(f"/nodes/{NODE}")
    assert seen["power"] == "on"
    assert seen["kubernetes"]["present"] and seen["kubernetes"]["ready"]
    assert not seen["kubernetes"]["unschedulable"]
    assert seen["kubernetes"]["labels"].get("openstack-compute-node") == "enabled"
    for disk in before["disks"]:
        assert seen["disks"][disk]["marker"] != before["disks"][disk]["marker"]
    actions = drydock(berth, f"/nodes/{NODE}")["bootactions"]
    assert [(a["action_name"], a["action_status"]) for a in actions] == [("promjoin", "success")]
    assert steps_of(view)[f"wait_boot_actions.{NODE}"]["state"] == "success"
