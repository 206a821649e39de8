"""The default teardown on the simulated site wipes every disk or refuses the node untouched:
a Ready machine is allocated and released with erase; a New or absent one, whose BMC cannot
erase, fails WipeNotPossible with nothing touched (power, MAAS, disks as they were)."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.integration.drydock.conftest import Env

pytestmark = pytest.mark.slow


def count(env: Env, system: str, node: str, op: str | None = None) -> int:
    params = {"system": system, "node": node, **({"op": op} if op else {})}
    return int(env.sim("/calls", **params)["count"])


def power_on(env: Env, node: str) -> None:
    resp = requests.put(f"{env.site.urls['sitesim']}/nodes/{node}/power", json={"power": "on"},
                        timeout=10)
    assert resp.status_code == 200 and resp.json()["power"] == "on", resp.text


def errors(task: dict[str, Any], node: str) -> list[dict[str, Any]]:
    return [m for m in task["result"]["details"]["messageList"]
            if m["error"] and m.get("node") == node]


def test_a_ready_machine_with_an_ipmi_bmc_is_allocated_released_with_erase_and_attested(
        dd_env: Env):
    before = dd_env.sim("/nodes/ipmi-r")
    assert before["maas_status"] == "Ready" and before["disks"]["sdb"]["marker"]
    task = dd_env.wait(dd_env.post_task(["ipmi-r"]).json()["task_id"])
    assert task["result"]["status"] == "success", task["result"]
    assert count(dd_env, "maas", "ipmi-r", "allocate") == 1
    assert count(dd_env, "maas", "ipmi-r", "release") == 1
    assert count(dd_env, "maas", "ipmi-r", "secure_erase") == 1
    after = dd_env.sim("/nodes/ipmi-r")
    assert after["maas_status"] is None and after["power"] == "off"
    for disk in after["disks"].values():
        assert disk["wiped"] and disk["marker"] is None
        assert disk["wiped_by"].startswith("maas ")
    rows = {m["disk"]: m for m in task["result"]["details"]["messageList"]
            if m.get("node") == "ipmi-r" and m.get("step") == "report_disks" and "disk" in m}
    assert set(rows) == {"sda", "sdb"}
    for row in rows.values():
        assert row["result"] == "wiped" and row["at"]
        assert row["verified_by"].startswith("MAAS finished the secure erase")
        assert row["verified_by"].endswith("of the machine Drydock allocated for it")


@pytest.mark.parametrize("name,status", [("ipmi-n", "New"), ("rf-x", None)])
def test_a_machine_maas_cannot_erase_and_a_bmc_that_cannot_is_refused_untouched(
        dd_env: Env, name: str, status: str | None):
    power_on(dd_env, name)
    before = dd_env.sim(f"/nodes/{name}")
    assert before["maas_status"] == status
    system = "ipmi" if name.startswith("ipmi") else "redfish"
    bmc_calls = count(dd_env, system, name)
    task = dd_env.wait(dd_env.post_task([name]).json()["task_id"])
    assert task["result"]["status"] == "failure" and task["result"]["failures"] == [name]
    [error] = errors(task, name)
    assert error["step"] == "plan_wipe" and "WipeNotPossible" in error["message"]
    assert ("the machine is not in MAAS" if status is None
            else "in status New") in error["message"]
    after = dd_env.sim(f"/nodes/{name}")
    assert after["power"] == "on" and after["maas_status"] == status
    assert after["disks"] == before["disks"]
    assert count(dd_env, "maas", name) == 0  # no allocate, release, delete of the machine
    if system == "ipmi":
        assert count(dd_env, system, name) == bmc_calls  # not even asked for its power state
    for op in ("graceful_shutdown", "power_off", "power_cycle", "power_reset"):
        assert count(dd_env, system, name, op) == 0
