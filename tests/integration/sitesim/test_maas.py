"""The MAAS simulator over HTTP: OAuth, machine operations and their effects on the site."""

from __future__ import annotations

import pytest
import requests
from requests_oauthlib import OAuth1

from tests.integration.sitesim.conftest import calls, maas_auth, node, wait_for


@pytest.fixture
def maas(sitesim_site):
    base = sitesim_site.urls["maas"] + "/api/2.0"
    auth = maas_auth(sitesim_site.spec.maas_api_key)

    def call(method, path, **kwargs):
        return requests.request(method, base + path, auth=auth, timeout=10, **kwargs)

    return call


def machine_of(maas, hostname):
    found = maas("GET", "/machines/", params={"hostname": hostname}).json()
    assert len(found) == 1
    return found[0]


def status_of(maas, system_id):
    return maas("GET", f"/machines/{system_id}/").json()["status_name"]


def test_wrong_key_is_refused_with_401(sitesim_site):
    url = sitesim_site.urls["maas"] + "/api/2.0/machines/"
    bad = OAuth1("sitesim-consumer", "", "sitesim-token", "wrong", signature_method="PLAINTEXT")
    assert requests.get(url, auth=bad, timeout=10).status_code == 401
    assert requests.get(url, timeout=10).status_code == 401


def test_list_filters_by_hostname_and_mac(maas, sitesim_site):
    everything = maas("GET", "/machines/").json()
    assert {m["hostname"] for m in everything} >= {f"node0{i}" for i in range(1, 7)}
    mac = sitesim_site.spec.node("node02").mac
    by_mac = maas("GET", "/machines/", params={"mac_address": mac}).json()
    assert [m["hostname"] for m in by_mac] == ["node02"]
    one = machine_of(maas, "node03")
    assert (one["status"], one["status_name"]) == (6, "Deployed")
    assert maas("GET", f"/machines/{one['system_id']}/").json()["hostname"] == "node03"
    assert maas("GET", "/machines/nosuch/").status_code == 404


def test_release_with_erase_wipes_every_disk_and_powers_off(maas, sitesim_site):
    sid = machine_of(maas, "node04")["system_id"]
    reply = maas("POST", f"/machines/{sid}/", params={"op": "release"},
                 data={"erase": "true", "secure_erase": "true"})
    assert reply.status_code == 200
    assert reply.json()["status_name"] in ("Releasing", "Disk erasing", "Ready")
    wait_for(lambda: status_of(maas, sid) == "Ready")
    state = node(sitesim_site, "node04")
    assert state["power"] == "off"
    wiped = {"marker": None, "wiped": True, "wiped_by": "maas secure_erase"}
    assert state["disks"] == {"sda": wiped, "sdb": wiped}
    assert calls(sitesim_site, system="maas", op="secure_erase", node="node04") == 1
    assert calls(sitesim_site, system="maas", op="quick_erase", node="node04") == 0
    wait_for(lambda: not node(sitesim_site, "node04")["kubernetes"]["ready"])


def test_ready_machine_commissions_allocates_and_deploys(maas, sitesim_site):
    sid = machine_of(maas, "node04")["system_id"]
    if status_of(maas, sid) != "Ready":
        maas("POST", f"/machines/{sid}/", params={"op": "release"})
        wait_for(lambda: status_of(maas, sid) == "Ready")
    assert maas("POST", f"/machines/{sid}/", params={"op": "commission"}).json()[
        "status_name"] == "Commissioning"
    wait_for(lambda: status_of(maas, sid) == "Ready")
    allocated = maas("POST", "/machines/", params={"op": "allocate"}, data={"name": "node04"})
    assert allocated.json()["status_name"] == "Allocated"
    reply = maas("POST", f"/machines/{sid}/", params={"op": "deploy"},
                 data={"distro_series": "jammy"})
    assert reply.json()["status_name"] == "Deploying"
    wait_for(lambda: status_of(maas, sid) == "Deployed")
    state = wait_for(lambda: (s := node(sitesim_site, "node04"))["kubernetes"]["ready"] and s)
    assert state["power"] == "on"
    assert state["disks"]["sda"]["marker"] and not state["disks"]["sda"]["wiped"]
    assert state["kubernetes"]["present"]


def test_quick_erase_is_recorded_apart_from_secure_erase(maas, sitesim_site):
    sid = machine_of(maas, "node05")["system_id"]
    maas("POST", f"/machines/{sid}/", params={"op": "release"},
         data={"erase": "true", "quick_erase": "true"})
    wait_for(lambda: status_of(maas, sid) == "Ready")
    assert calls(sitesim_site, system="maas", op="quick_erase", node="node05") == 1
    assert calls(sitesim_site, system="maas", op="secure_erase", node="node05") == 0
    assert node(sitesim_site, "node05")["disks"]["sdb"]["wiped"] is True


def test_operation_in_wrong_state_is_refused_with_409(maas):
    sid = machine_of(maas, "node02")["system_id"]
    reply = maas("POST", f"/machines/{sid}/", params={"op": "commission"})
    assert reply.status_code == 409
    assert "Deployed" in reply.text
    assert status_of(maas, sid) == "Deployed"


def test_deploy_fault_ends_in_failed_deployment(maas, sitesim_site, clean_faults):
    sid = machine_of(maas, "node05")["system_id"]
    if status_of(maas, sid) != "Ready":
        maas("POST", f"/machines/{sid}/", params={"op": "release"})
        wait_for(lambda: status_of(maas, sid) == "Ready")
    requests.post(sitesim_site.urls["sitesim"] + "/faults", timeout=10,
                  json={"node": "node05", "operation": "maas.deploy", "effect": "fail"})
    maas("POST", f"/machines/{sid}/", params={"op": "deploy"})
    wait_for(lambda: status_of(maas, sid) == "Failed deployment")
    assert maas("GET", f"/machines/{sid}/").json()["status"] == 11


def test_commission_hang_stays_commissioning(maas, sitesim_site, clean_faults):
    sid = machine_of(maas, "node05")["system_id"]
    if status_of(maas, sid) != "Ready":
        maas("POST", f"/machines/{sid}/", params={"op": "release"})
        wait_for(lambda: status_of(maas, sid) == "Ready")
    requests.post(sitesim_site.urls["sitesim"] + "/faults", timeout=10,
                  json={"node": "node05", "operation": "maas.commission", "effect": "hang"})
    maas("POST", f"/machines/{sid}/", params={"op": "commission"})
    wait_for(lambda: sitesim_site.model.call_count("maas", "commission", "node05") >= 1)
    assert status_of(maas, sid) == "Commissioning"
    assert node(sitesim_site, "node05")["maas_status"] == "Commissioning"


def test_power_parameters_and_storage(maas, sitesim_site):
    sid = machine_of(maas, "node01")["system_id"]
    params = maas("GET", f"/machines/{sid}/", params={"op": "power_parameters"}).json()
    assert params["power_user"] == "admin" and params["node_id"]
    devices = maas("GET", f"/nodes/{sid}/blockdevices/").json()
    assert [d["name"] for d in devices] == ["sda", "sdb"]
    layout = maas("POST", f"/machines/{sid}/", params={"op": "set_storage_layout"},
                  data={"storage_layout": "lvm"})
    assert layout.status_code == 409  # deployed: storage cannot change
    bad = maas("PUT", f"/machines/{sid}/", data={"bogus": "1"})
    assert bad.status_code == 400


def test_block_devices_format_unformat_and_delete(maas, sitesim_site):
    sid = machine_of(maas, "node04")["system_id"]
    if status_of(maas, sid) not in ("Ready", "Allocated"):
        maas("POST", f"/machines/{sid}/", params={"op": "release"})
        wait_for(lambda: status_of(maas, sid) == "Ready")
    devices = maas("GET", f"/nodes/{sid}/blockdevices/").json()
    sdb = next(d for d in devices if d["name"] == "sdb")
    path = f"/nodes/{sid}/blockdevices/{sdb['id']}/"
    part = maas("POST", path + "partitions/", data={"size": 10**9}).json()
    ppath = f"/nodes/{sid}/blockdevices/{sdb['id']}/partition/{part['id']}"
    formatted = maas("POST", ppath, params={"op": "format"}, data={"fstype": "ext4"}).json()
    assert formatted["filesystem"]["fstype"] == "ext4"
    assert maas("POST", ppath, params={"op": "unformat"}).json()["filesystem"] is None
    assert maas("DELETE", ppath).status_code == 204
    assert maas("POST", path, params={"op": "format"}, data={"fstype": "xfs"}).json()[
        "filesystem"]["fstype"] == "xfs"
    assert maas("POST", path, params={"op": "unformat"}).status_code == 200
    assert maas("DELETE", path).status_code == 204
    assert [d["name"] for d in maas("GET", f"/nodes/{sid}/blockdevices/").json()] == ["sda"]
