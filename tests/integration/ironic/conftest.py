"""One simulated site and one Drydock Ironic client per worker for the Ironic tests, and
helpers reading the site's BMCs (its admin API)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from drydock_api.drivers.ironic.client import IronicClient, IronicSettings, connect
from drydock_api.nodes.design import NodeDef, parse_design
from sitesim.ironic.server import IronicServer
from sitesim.site import Site
from tests.fixtures.site import start_test_site, stop_site


@pytest.fixture(scope="package")
def site() -> Iterator[Site]:
    """The servers and their BMCs, with no cluster: Ironic and Drydock never read it."""
    running = start_test_site(overrides={"kubernetes": False})
    try:
        yield running
    finally:
        stop_site(running)


@pytest.fixture(scope="package")
def ironic_server(ironic_installed: None,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[IronicServer]:
    """One Ironic for these tests, stopped when the worker leaves them (its conductor syncs
    every node's power with its BMC every few seconds while it runs)."""
    with IronicServer(tmp_path_factory.mktemp("ironic")) as server:
        yield server


@pytest.fixture(scope="package")
def client(ironic_server: IronicServer) -> IronicClient:
    images = ironic_server.images
    return IronicClient(connect(ironic_server.url), IronicSettings(
        poll=0.2, timeout=60, power_timeout=20, lock_backoff=0.2,
        kernel_url=f"file://{images}/kernel", ramdisk_url=f"file://{images}/ramdisk"))


def design_node(site: Site, name: str) -> NodeDef:
    return parse_design(site.design_documents()).nodes[name]


def enroll(client: IronicClient, site: Site, name: str) -> None:
    node = design_node(site, name)
    assert node.bmc is not None
    client.enroll(name, node.bmc, node.data["metadata"]["boot_mac"])


def site_power(site: Site, name: str) -> str:
    return str(requests.get(f"{site.urls['sitesim']}/nodes/{name}", timeout=5).json()["power"])


def bmc_calls(site: Site, system: str, op: str, name: str) -> int:
    return int(requests.get(f"{site.urls['sitesim']}/calls", timeout=5,
                            params={"system": system, "op": op, "node": name}).json()["count"])


def fault(site: Site, name: str, operation: str, effect: str) -> None:
    requests.post(f"{site.urls['sitesim']}/faults", timeout=5, json={
        "node": name, "operation": operation, "effect": effect}).raise_for_status()


def clear_faults(site: Site) -> None:
    requests.delete(f"{site.urls['sitesim']}/faults", timeout=5).raise_for_status()




def fresh(client: IronicClient, site: Site, name: str) -> None:
    """Enroll `name` anew, whatever an earlier test left of it in this worker's Ironic."""
    node = client.node(name)
    if node is not None:
        if node.provision_state in ("active", "deploy failed"):
            node = client.undeploy(name, erase=None)
        if node.provision_state == "available" and node.instance_uuid:
            client.set_instance(name, None)
        client.delete(name)
    enroll(client, site, name)
