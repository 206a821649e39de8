"""A site with `provisioner: ironic` (etc/sites/ironic-demo.yaml) starts a real Ironic with its
nodes enrolled against the site's BMCs, in the states the site file gives; power through
Ironic reaches the BMC and so the site's Kubernetes, as power through MAAS does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from sitesim.ironic.server import API_VERSION
from sitesim.site import Site
from tests.fixtures.services import wait_for
from tests.fixtures.site import start_test_site, stop_site

HEADERS = {"X-OpenStack-Ironic-API-Version": API_VERSION}


@pytest.fixture(scope="module")
def ironic_site(ironic_installed: None) -> Iterator[Site]:
    site = start_test_site("etc/sites/ironic-demo.yaml")
    try:
        yield site
    finally:
        stop_site(site)


def node(site: Site, name: str) -> dict[str, object]:
    body = requests.get(f"{site.urls['ironic']}/v1/nodes/{name}", headers=HEADERS, timeout=10)
    body.raise_for_status()
    return dict(body.json())


def test_the_nodes_are_enrolled_in_the_states_of_the_site_file(ironic_site: Site) -> None:
    assert {node(ironic_site, n)["provision_state"] for n in ("node01", "node03", "node06")} \
        == {"active"}  # deployed in the site file: adopted, not deployed again
    assert node(ironic_site, "node03")["driver"] == "ipmi"
    assert node(ironic_site, "node01")["driver"] == "redfish"
    region = [d for d in ironic_site.design_documents() if d["schema"] == "drydock/Region/v1"]
    assert region[0]["data"]["provisioner"] == "ironic"


def test_power_off_through_ironic_stops_the_nodes_kubelet(ironic_site: Site) -> None:
    admin = ironic_site.urls["sitesim"]
    assert requests.get(f"{admin}/nodes/node04", timeout=5).json()["kubernetes"]["ready"]
    requests.put(f"{ironic_site.urls['ironic']}/v1/nodes/node04/states/power", headers=HEADERS,
                 json={"target": "power off"}, timeout=10).raise_for_status()

    def off_everywhere() -> tuple[dict[str, Any], dict[str, object]] | None:
        seen = requests.get(f"{admin}/nodes/node04", timeout=5).json()
        recorded = node(ironic_site, "node04")  # the conductor records it once it confirmed
        done = (seen["power"] == "off" and not seen["kubernetes"]["ready"]
                and recorded["power_state"] == "power off")
        return (seen, recorded) if done else None

    seen, recorded = wait_for(off_everywhere, 120, "node04 off at its BMC, in Kubernetes "
                              "and in Ironic")
    assert seen["power"] == "off"
    assert not seen["kubernetes"]["ready"]
    assert recorded["power_state"] == "power off" and recorded["target_power_state"] is None
