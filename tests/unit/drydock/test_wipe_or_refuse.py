"""The default teardown wipes every disk or refuses the node untouched (WipeNotPossible): the
plan by MAAS status and BMC coverage, and destroy_nodes on fakes, races included."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.ports import BmcAccess
from drydock_api.nodes.design import NodeDef
from drydock_api.tasks import wipe
from tests.unit.drydock.conftest import Site, SiteFactory
from tests.unit.drydock.test_orchestrator import disk_rows, messages, run_task

REDFISH = BmcAccess("redfish", "10.0.0.1", 443, "admin", "pw")
IPMI = BmcAccess("ipmi", "10.0.0.2", 623, "admin", "pw")
RELEASES = ("Allocated", "Deployed", "Deploying", "Failed deployment", "Failed releasing",
            "Failed disk erasing", "Broken")
UNDER_WAY = ("Releasing", "Disk erasing")
NEITHER = ("New", "Commissioning", "Failed commissioning", "Testing", "Failed testing",
           "Rescue mode", None)


def node(bmc: BmcAccess | None) -> NodeDef:
    return NodeDef("n1", None, (), {}, bmc and bmc.type, bmc and bmc.address,
                   bmc and bmc.port, bmc, ("sda", "sdb"), "sda")


def planned(bmc: BmcAccess | None, erasable: set[str], status: str | None,
            **options: Any) -> wipe.Plan:
    n = node(bmc)
    return wipe.with_maas(wipe.plan(n, options, erasable), n, options, erasable,
                          wipe.MaasView(status))


# --- the plan: MAAS status x BMC coverage ------------------------------------------------
@pytest.mark.parametrize("status", RELEASES + UNDER_WAY + ("Ready",) + NEITHER)
def test_a_bmc_erasing_every_disk_needs_nothing_from_maas(status: str | None):
    p = planned(REDFISH, {"sda", "sdb"}, status)
    assert p.refusal is None and p.maas_erase is None and not p.acquire
    assert {d["method"] for d in p.disks} == {wipe.BMC}


@pytest.mark.parametrize("bmc,erasable", [(REDFISH, {"sda"}), (REDFISH, set()), (IPMI, set()),
                                          (None, set())])
@pytest.mark.parametrize("status", RELEASES + UNDER_WAY)
def test_maas_erases_at_release_a_machine_it_can_release(
        bmc: BmcAccess | None, erasable: set[str], status: str):
    p = planned(bmc, erasable, status)
    assert p.refusal is None and p.maas_erase == "secure" and not p.acquire
    assert all(d["result"] == "wiped" for d in p.disks)


@pytest.mark.parametrize("bmc,erasable", [(REDFISH, {"sda"}), (IPMI, set()), (None, set())])
def test_a_ready_machine_is_allocated_first_then_released_with_erase(
        bmc: BmcAccess | None, erasable: set[str]):
    p = planned(bmc, erasable, "Ready")
    assert p.refusal is None and p.maas_erase == "secure" and p.acquire
    assert "allocated first, then released with erase" in wipe.describe_plan(p)


@pytest.mark.parametrize("bmc,erasable", [(REDFISH, {"sda"}), (REDFISH, set()), (IPMI, set()),
                                          (None, set())])
@pytest.mark.parametrize("status", NEITHER)
def test_a_machine_maas_can_neither_release_nor_allocate_is_wipe_not_possible(
        bmc: BmcAccess | None, erasable: set[str], status: str | None):
    p = planned(bmc, erasable, status)
    assert p.reason == "WipeNotPossible" and p.refusal and "Nothing was touched" in p.refusal
    assert ("the machine is not in MAAS" if status is None
            else f"in status {status}") in p.refusal
    assert p.disks == [] and p.maas_erase is None


@pytest.mark.parametrize("mode", ["quick", "zero"])
def test_quick_and_zero_erases_need_a_machine_maas_can_erase_too(mode: str):
    assert planned(REDFISH, {"sda", "sdb"}, "Ready", erase=mode).acquire
    refused = planned(REDFISH, {"sda", "sdb"}, "New", erase=mode)
    assert refused.reason == "WipeNotPossible" and f"erase: {mode}" in str(refused.refusal)


def test_what_the_request_asked_not_to_wipe_needs_no_maas():
    p = planned(IPMI, set(), None, preserve_local_storage=True, os_disk_erase="none")
    assert p.refusal is None
    assert {d["disk"]: d["result"] for d in p.disks} == {"sda": "not wiped", "sdb": "kept"}


# --- destroy_nodes on fakes ----------------------------------------------------------------
def machine_site(make_site: SiteFactory, status: str | None) -> Site:
    site = make_site(["n1"])
    if status is None:
        site.maas.machines.clear()
    else:
        site.maas.machines["id-n1"] = dataclasses.replace(site.maas.machines["id-n1"],
                                                          status_name=status)
    return site


@pytest.mark.parametrize("status", ["New", "Commissioning", "Failed commissioning", None])
def test_default_destroy_refuses_a_node_it_cannot_wipe_before_touching_it(
        make_site: SiteFactory, status: str | None):
    site = machine_site(make_site, status)
    before = dict(site.maas.machines)
    task = run_task(site)
    assert task["result"]["status"] == "failure" and task["result"]["failures"] == ["n1"]
    [error] = [m for m in task["result"]["details"]["messageList"] if m["error"]]
    assert error["step"] == "plan_wipe" and "WipeNotPossible" in error["message"]
    assert site.oob.power.get(site.address("n1"), "on") == "on"
    assert site.oob.calls[("graceful", site.address("n1"))] == 0
    assert site.maas.machines == before  # not allocated, released nor deleted
    assert site.maas.calls[("allocate", "n1")] == site.maas.calls[("release", "n1")] == 0
    assert not site.runtime.nodes.get("n1") or not site.runtime.nodes.get("n1").torn_down


def test_default_destroy_of_a_ready_machine_allocates_and_releases_it_with_erase(
        make_site: SiteFactory):
    site = machine_site(make_site, "Ready")
    task = run_task(site)
    assert task["result"]["status"] == "success", messages(task)
    assert site.maas.calls[("allocate", "n1")] == 1
    assert site.maas.erase_modes == {"n1": "secure"} and site.maas.machines == {}
    rows = disk_rows(task, "n1")
    assert {r["result"] for r in rows.values()} == {"wiped"}
    assert all(r["verified_by"] == "MAAS finished the secure erase (Disk erasing, then Ready) "
               "of the machine Drydock allocated for it" for r in rows.values())


class RaceMaas(FakeMaas):
    """A machine that changes status in MAAS once the node is powered off (after the plan)."""

    def __init__(self, then: str | None) -> None:
        super().__init__(["n1"])
        self.then, self.armed = then, False

    def find_machine(self, hostname: str) -> Any:
        if self.armed:
            self.armed = False
            if self.then is None:
                self.machines.clear()
            else:
                self._set("id-n1", self.then)
        return super().find_machine(hostname)


def race_site(make_site: SiteFactory, then: str | None) -> tuple[Site, RaceMaas]:
    site = make_site(["n1"])
    race = RaceMaas(then)
    site.runtime.ports.machines = race  # the worker's steps use these ports
    power_off = site.oob.power_off

    def arm(bmc: BmcAccess, *, graceful: bool) -> None:
        power_off(bmc, graceful=graceful)
        race.armed = True

    site.oob.power_off = arm  # type: ignore[method-assign]
    return site, race


def test_a_machine_that_became_ready_after_the_plan_is_allocated_and_erased(
        make_site: SiteFactory):
    site, race = race_site(make_site, "Ready")
    task = run_task(site)
    assert task["result"]["status"] == "success", messages(task)
    assert race.calls[("allocate", "n1")] == 1 and race.erase_modes == {"n1": "secure"}
    assert {r["result"] for r in disk_rows(task, "n1").values()} == {"wiped"}


@pytest.mark.parametrize("then", ["New", None])
def test_a_machine_maas_can_no_longer_erase_fails_the_node_not_wiped_never_success(
        make_site: SiteFactory, then: str | None):
    site, race = race_site(make_site, then)
    task = run_task(site)
    assert task["result"]["status"] == "failure"
    [error] = [m for m in task["result"]["details"]["messageList"] if m["error"]]
    assert error["step"] == "release" and "WipeNotPossible" in error["message"]
    assert race.erase_modes == {}


def test_a_release_answered_ready_is_not_taken_for_an_erase(make_site: SiteFactory):
    """MAAS answers a release of a Ready machine with success and erases nothing."""
    site = make_site(["n1"])
    maas = site.maas
    real_release = maas.release

    def release_after_it_became_ready(system_id: str, erase: str | None) -> Any:
        if not maas.calls[("release", "n1")]:
            maas._set(system_id, "Ready")  # became Ready just before the call
        return real_release(system_id, erase)

    maas.release = release_after_it_became_ready  # type: ignore[method-assign]
    task = run_task(site)
    assert task["result"]["status"] == "success", messages(task)
    assert maas.calls[("release", "n1")] == 2 and maas.calls[("allocate", "n1")] == 1
    assert maas.erase_modes == {"n1": "secure"}


# --- asked before anything runs ------------------------------------------------------------
def test_the_destroy_preview_shows_wipe_not_possible_and_the_ready_machine_allocated(
        make_site: SiteFactory, tmp_path: Any):
    import falcon.testing

    from drydock_api.app import Deps, create_app
    from tests.unit.drydock.conftest import make_conf
    from tests.unit.drydock.test_api import ADMIN, TOKENS, post, task_request

    site = make_site(["n1", "n2"])
    site.maas.machines["id-n1"] = dataclasses.replace(site.maas.machines["id-n1"],
                                                      status_name="New")
    site.maas.machines["id-n2"] = dataclasses.replace(site.maas.machines["id-n2"],
                                                      status_name="Ready")
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    body = task_request(site)
    body["node_filter"] = None
    body["options"] = {"all_nodes": True}
    resp = post(client, "/api/v1.0/tasks/preview", body)
    assert resp.status_code == 200, resp.json
    nodes = {n["node"]: n for n in resp.json["nodes"]}
    assert nodes["n1"]["wipe"]["reason"] == "WipeNotPossible"
    assert any("in status New" in b for b in nodes["n1"]["blockers"])
    assert nodes["n2"]["wipe"]["maas_acquire"] is True and nodes["n2"]["blockers"] == []
    assert site.maas.calls[("allocate", "n2")] == 0  # asking touched nothing
    assert client.simulate_get("/api/v1.0/tasks", headers=ADMIN).json == []


def test_the_wipe_plan_shipyard_asks_first_refuses_what_maas_cannot_erase(
        make_site: SiteFactory, tmp_path: Any):
    """Shipyard's redeploy_server asks this before decommissioning anything."""
    import falcon.testing

    from drydock_api.app import Deps, create_app
    from tests.unit.drydock.conftest import make_conf
    from tests.unit.drydock.test_api import TOKENS, post

    site = make_site(["n1", "n2", "n3"])
    site.maas.machines["id-n1"] = dataclasses.replace(site.maas.machines["id-n1"],
                                                      status_name="Commissioning")
    del site.maas.machines["id-n2"]
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    body = {"design_ref": {"rel": "design", "href": site.href, "type": "application/x-yaml"},
            "node_names": ["n1", "n2", "n3"], "options": {}}
    resp = post(falcon.testing.TestClient(app), "/api/v1.0/wipeplan", body)
    assert resp.status_code == 200, resp.json
    n1, n2, n3 = resp.json
    assert n1["reason"] == n2["reason"] == "WipeNotPossible"
    assert "in status Commissioning" in n1["refusal"]
    assert "the machine is not in MAAS" in n2["refusal"]
    assert n3["refusal"] is None and n3["maas_status"] == "Deployed"
    assert [k for k, n in site.maas.calls.items() if n and k[0] != "find"] == []
