"""destroy_nodes end to end: drydock-api (with its worker thread) on the simulated site."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.integration.drydock.conftest import Env

pytestmark = pytest.mark.slow


def test_destroy_redfish_and_ipmi_nodes_powers_off_wipes_and_removes_them(dd_env: Env):
    resp = dd_env.post_task(["rf-a", "ipmi-a"])
    assert resp.status_code == 201, resp.text
    task = dd_env.wait(resp.json()["task_id"])
    assert task["result"]["status"] == "success", task["result"]
    for name in ("rf-a", "ipmi-a"):
        node = dd_env.sim(f"/nodes/{name}")
        assert node["power"] == "off"
        assert node["maas_status"] is None
        assert all(d["marker"] is None and d["wiped"] for d in node["disks"].values()), node
        assert dd_env.releases(name) == 1
    steps = {(m["node"], m["step"]) for m in task["result"]["details"]["messageList"]}
    assert ("ipmi-a", "power_off") in steps and ("rf-a", "delete") in steps
    assert "it-bmc-pw" not in repr(dd_env.task(task["task_id"], layers=-1))


def disk_rows(task: dict[str, Any], node: str) -> dict[str, dict[str, Any]]:
    return {m["disk"]: m for m in task["result"]["details"]["messageList"]
            if m.get("node") == node and m.get("step") == "report_disks" and "disk" in m}


def test_preserve_local_storage_wipes_only_the_os_disk_through_a_bmc_task(dd_env: Env):
    before = dd_env.sim("/nodes/rf-b")["disks"]["sdb"]["marker"]
    assert before
    task = dd_env.wait(dd_env.post_task(["rf-b"], preserve_local_storage=True).json()["task_id"])
    assert task["result"]["status"] == "success", task["result"]
    node = dd_env.sim("/nodes/rf-b")
    assert node["disks"]["sda"] == {"marker": None, "wiped": True,
                                    "wiped_by": "redfish Drive.SecureErase"}
    assert node["disks"]["sdb"]["marker"] == before and not node["disks"]["sdb"]["wiped"]
    assert node["power"] == "off" and node["maas_status"] is None
    rows = disk_rows(task, "rf-b")
    assert rows["sda"]["result"] == "wiped" and rows["sda"]["method"] == "redfish Drive.SecureErase"
    assert rows["sda"]["verified_by"].startswith("BMC task /redfish/v1/TaskService/Tasks/erase-")
    assert rows["sda"]["verified_by"].endswith("completed") and rows["sda"]["at"]
    assert rows["sdb"] == {**rows["sdb"], "result": "kept", "method": None, "verified_by": None}


def test_preserve_local_storage_on_an_ipmi_node_is_refused_untouched(dd_env: Env):
    before = dd_env.sim("/nodes/ipmi-e")
    task = dd_env.wait(dd_env.post_task(["ipmi-e"], preserve_local_storage=True)
                       .json()["task_id"])
    assert task["result"]["status"] == "failure"
    [error] = [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert "ipmi-e" in error and "OS disk sda alone" in error and "(ipmi)" in error
    after = dd_env.sim("/nodes/ipmi-e")
    assert after["disks"] == before["disks"] and after["power"] == "on"
    assert after["maas_status"] == "Deployed" and dd_env.releases("ipmi-e") == 0


def test_secure_only_is_refused_where_the_bmc_cannot_erase_and_a_failed_erase_stops(
        dd_env: Env):
    refused = dd_env.wait(dd_env.post_task(["rf-n"], erase="secure_only").json()["task_id"])
    assert refused["result"]["status"] == "failure"
    assert dd_env.sim("/nodes/rf-n")["maas_status"] == "Deployed"
    dd_env.fault("rf-m", "bmc.erase", "fail")
    try:
        failed = dd_env.wait(dd_env.post_task(["rf-m"], erase="secure_only").json()["task_id"])
    finally:
        dd_env.clear_faults()
    assert failed["result"]["status"] == "failure"
    errors = [m["message"] for m in failed["result"]["details"]["messageList"] if m["error"]]
    assert any(f"Drive.SecureErase of {d} failed" in e for e in errors
               for d in ("sda", "sdb")), errors  # the erases run side by side
    assert dd_env.releases("rf-m") == 0 and dd_env.sim("/nodes/rf-m")["disks"]["sda"]["marker"]


def test_unresponsive_bmc_fails_its_node_and_the_others_succeed(dd_env: Env):
    dd_env.fault("rf-c", "bmc.power", "hang")
    try:
        task = dd_env.wait(dd_env.post_task(["rf-c", "rf-d"]).json()["task_id"])
    finally:
        dd_env.clear_faults()
    assert task["result"]["status"] == "partial_success"
    assert task["result"]["successes"] == ["rf-d"] and task["result"]["failures"] == ["rf-c"]
    errors = [m for m in task["result"]["details"]["messageList"] if m["error"]]
    assert errors and all(m["node"] == "rf-c" for m in errors)
    assert "Redfish BMC" in errors[0]["message"]
    assert dd_env.sim("/nodes/rf-c")["maas_status"] == "Deployed"
    assert dd_env.sim("/nodes/rf-d")["maas_status"] is None


def test_maas_release_failure_is_reported_with_maas_status(dd_env: Env):
    dd_env.fault("rf-e", "maas.release", "fail")
    try:
        task = dd_env.wait(dd_env.post_task(["rf-e"]).json()["task_id"])
    finally:
        dd_env.clear_faults()
    assert task["result"]["status"] == "failure"
    errors = [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert any("Failed releasing" in m for m in errors), errors
    assert dd_env.sim("/nodes/rf-e")["maas_status"] == "Failed releasing"


def test_overlapping_task_is_refused_and_terminate_stops_the_task(dd_env: Env):
    first = dd_env.post_task(["rf-h"])
    assert first.status_code == 201
    clash = dd_env.post_task(["rf-h", "rf-g"])
    assert clash.status_code == 409 and clash.json()["reason"] == "NodesBusy"
    task_id = first.json()["task_id"]
    stop = requests.post(f"{dd_env.url}/api/v1.0/tasks/{task_id}/terminate",
                         headers=dd_env.headers, timeout=10)
    assert stop.status_code == 200 and stop.json()["status"] in ("terminating", "terminated")
    task = dd_env.wait(task_id)
    assert task["status"] == "terminated"
    assert dd_env.releases("rf-h") == 0 and dd_env.sim("/nodes/rf-h")["maas_status"]


def test_ignored_graceful_shutdown_ends_in_force_off_and_quick_erase(dd_env: Env):
    task = dd_env.wait(dd_env.post_task(["rf-k", "ipmi-d"], erase="quick").json()["task_id"])
    assert task["result"]["status"] == "success", task["result"]
    texts = {m["node"]: m["message"] for m in task["result"]["details"]["messageList"]
             if m["step"] == "power_off"}
    assert "forced off" in texts["rf-k"] and "graceful shutdown accepted" in texts["ipmi-d"]
    assert dd_env.sim("/calls", system="maas", op="quick_erase", node="ipmi-d")["count"] == 1
    for name in ("rf-k", "ipmi-d"):
        node = dd_env.sim(f"/nodes/{name}")
        assert node["power"] == "off" and node["maas_status"] is None
        assert all(d["wiped"] for d in node["disks"].values())


def test_destroying_an_already_destroyed_node_succeeds(dd_env: Env):
    task = dd_env.wait(dd_env.post_task(["rf-a"]).json()["task_id"])
    assert task["result"]["status"] == "success", task["result"]
    assert dd_env.releases("rf-a") == 1


def test_nodes_and_node_filter_over_http(dd_env: Env):
    nodes = requests.get(f"{dd_env.url}/api/v1.0/nodes", params={"design_ref": dd_env.href},
                         headers=dd_env.headers, timeout=30).json()
    by_name = {n["hostname"]: n for n in nodes}
    assert by_name["rf-j"]["maas_status"] == "Deployed" and by_name["rf-j"]["power_state"] == "on"
    assert by_name["ipmi-b"]["oob_type"] == "ipmi"
    picked = requests.post(f"{dd_env.url}/api/v1.0/nodefilter", headers=dd_env.headers,
                           timeout=30, json={"design_ref": dd_env.href, "node_filter": {
                               "filter_set_type": "intersection", "filter_set": [
                                   {"rack_names": ["rack04"]}, {"node_tags": ["compute"]}]}})
    assert picked.json() == ["rf-i", "rf-j"]
    valid = requests.post(f"{dd_env.url}/api/v1.0/validatedesign", headers=dd_env.headers,
                          timeout=30, json={"href": dd_env.href})
    assert valid.status_code == 200, valid.text
