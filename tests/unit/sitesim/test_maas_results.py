"""sitesim MAAS: commissioning results describe the machine's modelled disks and boot NIC,
exist only once it is commissioned, and are dated by its last commissioning."""

from __future__ import annotations

import base64
import json

from sitesim.maas.machines import MachineStore
from sitesim.maas.results import CommissioningResults
from sitesim.maas.statuses import Status
from tests.unit.sitesim.test_maas_enlist import fresh  # noqa: F401
from tests.unit.sitesim.test_model_maas import model, until  # noqa: F401


def decoded(result: dict) -> str:
    return base64.b64decode(result["data"]).decode()


def test_results_follow_commissioning(model, fresh: MachineStore):  # noqa: F811
    now = [1_800_000_000.0]
    results = CommissioningResults(clock=lambda: now[0])
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.NEW, node)
    assert results.of(machine, [], None) == []  # never commissioned: nothing to report
    now[0] += 100
    results.commissioning(machine.system_id, 5.0)
    fresh.commission(machine.system_id)
    assert results.of(machine, [], None) == []  # still commissioning
    until(lambda: machine.status == Status.READY)
    found = results.of(machine, [], None)
    assert [r["name"] for r in found] == ["00-maas-07-block-devices",
                                          "99-maas-03-network-interfaces"]
    assert {r["updated"] for r in found} == {"2027-01-15T08:01:45.000"}
    assert all(r["script_result"] == 0 and r["result_type"] == 0 for r in found)
    disks = json.loads(decoded(found[0]))
    assert [d["NAME"] for d in disks] == [d.name for d in node.disks]
    assert [int(d["SIZE"]) for d in disks] == [d.size_gb * 10**9 for d in node.disks]
    assert f"link/ether {node.mac}" in decoded(found[1])
    assert [r["name"] for r in results.of(machine, ["99-maas-03-network-interfaces"], 0)] \
        == ["99-maas-03-network-interfaces"]
    assert results.of(machine, [], 2) == []  # testing results: none kept


def test_a_machine_the_site_started_commissioned_has_results_from_the_start(model, fresh):  # noqa: F811
    results = CommissioningResults(clock=lambda: 1_800_000_000.0)
    node = model.spec.node("node04")
    machine = fresh.create("node04", node.mac, Status.DEPLOYED, node)
    found = results.of(machine, [], None)
    assert {r["updated"] for r in found} == {"2027-01-15T08:00:00.000"}
