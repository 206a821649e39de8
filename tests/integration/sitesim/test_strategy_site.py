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
