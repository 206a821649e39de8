"""The Redfish BMC app in-process: graceful shutdown, hung power calls, auth, SecureErase."""

from __future__ import annotations

import base64
import dataclasses
import threading
import time
from pathlib import Path

import pytest
import yaml
from werkzeug.test import Client

from sitesim.bmc.redfish import RedfishBmc, system_uuid
from sitesim.bmc.sushy_drivers import install_drivers
from sitesim.model import SiteModel
from sitesim.scheduler import Scheduler
from sitesim.siteconfig import parse_site

ROOT = Path(__file__).resolve().parents[3]
AUTH = {"Authorization": "Basic " + base64.b64encode(b"admin:sitesim-bmc").decode()}


@pytest.fixture
def model():
    raw = yaml.safe_load((ROOT / "etc/sites/demo.yaml").read_text())
    raw["nodes"][4]["bmc"]["ignore_graceful_shutdown"] = True  # node05
    spec = parse_site(raw)
    spec = dataclasses.replace(spec, timings=dataclasses.replace(
        spec.timings, power=0.01, graceful_shutdown=0.01, erase=0.05))
    scheduler = Scheduler()
    yield SiteModel(spec, scheduler)
    scheduler.stop()


@pytest.fixture
def client(model):
    nodes = [n for n in model.spec.nodes if n.bmc.type == "redfish"]
    return Client(RedfishBmc(model, nodes, install_drivers()))


def reset(client, node, kind):
    uid = system_uuid("demo", node)
    return client.post(f"/redfish/v1/Systems/{uid}/Actions/ComputerSystem.Reset",
                       json={"ResetType": kind}, headers=AUTH)


def settle():
    time.sleep(0.1)


def until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def test_graceful_shutdown_is_honoured(client, model):
    assert reset(client, "node04", "GracefulShutdown").status_code == 204
    until(lambda: not model.is_on("node04"))


def test_a_node_can_ignore_graceful_shutdown_but_not_force_off(client, model):
    assert reset(client, "node05", "GracefulShutdown").status_code == 204
    settle()
    assert model.is_on("node05")
    assert reset(client, "node05", "ForceOff").status_code == 204
    until(lambda: not model.is_on("node05"))
    assert model.call_count("redfish", "graceful_shutdown", "node05") == 1


def test_hung_power_call_returns_only_when_the_fault_is_cleared(client, model):
    model.add_fault({"node": "node04", "operation": "bmc.power", "effect": "hang"})
    done = threading.Event()
    threading.Thread(target=lambda: (reset(client, "node04", "ForceOff"), done.set()),
                     daemon=True).start()
    assert not done.wait(0.3)
    model.clear_faults()
    assert done.wait(5)


def test_system_paths_need_the_nodes_credentials(client):
    uid = system_uuid("demo", "node01")
    assert client.get(f"/redfish/v1/Systems/{uid}").status_code == 401
    assert client.get(f"/redfish/v1/Systems/{uid}", headers=AUTH).status_code == 200
    assert client.get("/redfish/v1/Systems").status_code == 200


def test_secure_erase_of_unknown_drive_is_404_and_get_is_405(client, model):
    uid = system_uuid("demo", "node01")
    base = f"/redfish/v1/Systems/{uid}/Storage/1/Drives"
    assert client.post(f"{base}/sdz/Actions/Drive.SecureErase", headers=AUTH).status_code == 404
    assert client.get(f"{base}/sda/Actions/Drive.SecureErase", headers=AUTH).status_code == 405
    assert model.node("node01").disks["sda"].marker


def _drive_json(client, node, drive):
    uid = system_uuid("demo", node)
    return client.get(f"/redfish/v1/Systems/{uid}/Storage/1/Drives/{drive}", headers=AUTH).json


def test_secure_erase_is_a_task_that_completes_after_a_while(client, model):
    target = _drive_json(client, "node04", "sdb")["Actions"]["#Drive.SecureErase"]["target"]
    reply = client.post(target, headers=AUTH, json={})
    assert reply.status_code == 202 and reply.json["TaskState"] == "Running"
    assert model.node("node04").disks["sdb"].marker  # not yet
    location = reply.headers["Location"]
    until(lambda: client.get(location, headers=AUTH).json["TaskState"] != "Running")
    assert client.get(location, headers=AUTH).json["TaskState"] == "Completed"
    assert model.node("node04").disks["sdb"].wiped_by == "redfish Drive.SecureErase"
    assert model.node("node04").disks["sda"].marker


def test_a_bmc_without_drive_erase_offers_no_action_and_refuses_it(model):
    node = dataclasses.replace(model.spec.node("node04"),
                               bmc=dataclasses.replace(model.spec.node("node04").bmc,
                                                       drive_erase=False))
    client = Client(RedfishBmc(model, [node], install_drivers()))
    assert "Actions" not in _drive_json(client, "node04", "sda")
    uid = system_uuid("demo", "node04")
    reply = client.post(f"/redfish/v1/Systems/{uid}/Storage/1/Drives/sda/Actions/"
                        "Drive.SecureErase", headers=AUTH, json={})
    assert reply.status_code == 400
    assert model.call_count("redfish", "secure_erase", "node04") == 0


def test_a_storage_controller_without_volumes_lists_none(client):
    """A BMC without RAID volumes answers an empty collection (Ironic's redfish inspection
    reads it; a 500 there made the inspection retry for 30 s)."""
    uid = system_uuid("demo", "node04")
    reply = client.get(f"/redfish/v1/Systems/{uid}/Storage/1/Volumes", headers=AUTH)
    assert reply.status_code == 200, reply.text
    assert reply.json["Members"] == [] and reply.json["Members@odata.count"] == 0
