"""The strategy-example site: enlisted and Ready in MAAS, nothing deployed until asked."""

from __future__ import annotations

import pytest
import requests

from tests.integration.sitesim.conftest import maas_auth, node, wait_for

STRATEGY = "etc/sites/strategy-example.yaml"


@pytest.mark.parametrize("sitesim_site", [STRATEGY], indirect=True)
def test_machines_start_ready_and_a_deploy_joins_kubernetes(sitesim_site):
    nodes = requests.get(sitesim_site.urls["sitesim"] + "/nodes", timeout=10).json()
    assert len(nodes) == 11
    assert {n["maas_status"] for n in nodes} == {"Ready"}
    assert {n["power"] for n in nodes} == {"off"}
    assert not any(n["kubernetes"]["present"] for n in nodes)
    base = sitesim_site.urls["maas"] + "/api/2.0"
    auth = maas_auth(sitesim_site.spec.maas_api_key)
    (machine,) = requests.get(base + "/machines/", params={"hostname": "ntp01"}, auth=auth,
                              timeout=10).json()
    reply = requests.post(f"{base}/machines/{machine['system_id']}/", params={"op": "deploy"},
                          auth=auth, timeout=10)
    assert reply.status_code == 200
    state = wait_for(lambda: (s := node(sitesim_site, "ntp01"))["kubernetes"]["ready"] and s)
    assert state["maas_status"] == "Deployed" and state["power"] == "on"


@pytest.mark.parametrize("sitesim_site", [STRATEGY], indirect=True)
def test_deleted_machine_is_enlisted_again_and_commissioned(sitesim_site):
    base = sitesim_site.urls["maas"] + "/api/2.0"
    auth = maas_auth(sitesim_site.spec.maas_api_key)
    (machine,) = requests.get(base + "/machines/", params={"hostname": "monitoring03"},
                              auth=auth, timeout=10).json()
    assert requests.delete(f"{base}/machines/{machine['system_id']}/", auth=auth,
                           timeout=10).status_code == 204
    assert node(sitesim_site, "monitoring03")["maas_status"] is None
    bad = requests.post(base + "/machines/", data={"hostname": "stranger"}, auth=auth,
                        timeout=10)
    assert bad.status_code == 400 and "hostname" in bad.json() and "mac_addresses" in bad.json()
    mac = sitesim_site.spec.node("monitoring03").mac
    created = requests.post(base + "/machines/", auth=auth, timeout=10,
                            data={"hostname": "monitoring03", "mac_addresses": mac,
                                  "architecture": "amd64/generic", "power_type": "redfish"})
    assert created.status_code == 200
    assert created.json()["status_name"] == "Commissioning"
    wait_for(lambda: node(sitesim_site, "monitoring03")["maas_status"] == "Ready")
