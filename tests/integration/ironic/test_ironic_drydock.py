"""Drydock's API on a design whose Region says `provisioner: ironic`, against a real Ironic and
the site's BMCs; the same Drydock (MAAS configured too) serves a MAAS design from MAAS. Node
views and filters read Ironic's state, reboot requests power the node off and on through
Ironic (soft and hard as asked), retire and unretire set Ironic's retired fields (spec 003)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from drydock_api.drivers.ironic.client import IronicClient
from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.promenade import FakeLabeller
from drydock_api.runtime import Runtime, build_runtime
from sitesim.ironic.server import IronicServer
from sitesim.site import Site
from tests.integration.ironic.conftest import bmc_calls, fresh, site_power
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import make_conf
from tests.unit.drydock.test_api import TOKENS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
P = "/api/v1.0"
ADMIN = {"X-Auth-Token": "admin", "Content-Type": "application/json"}


@dataclass
class Drydock:
    api: falcon.testing.TestClient
    runtime: Runtime
    maas: FakeMaas
    ironic_ref: str  # the site's design, Region provisioner: ironic
    maas_ref: str  # the same nodes, Region provisioner: maas (the default)

    def call(self, method: str, path: str, ref: str, body: Any = None,
             **params: str) -> falcon.testing.Result:
        return self.api.simulate_request(
            method, f"{P}{path}", params={"design_ref": ref, **params}, headers=ADMIN,
            body=None if body is None else json.dumps(body))


def with_provisioner(docs: list[dict[str, Any]], name: str | None) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(docs))
    for doc in out:
        if doc["schema"] == "drydock/Region/v1":
            doc["data"].pop("provisioner", None)
            if name:
                doc["data"]["provisioner"] = name
    return out


@pytest.fixture(scope="module")
def drydock(ironic_server: IronicServer, site: Site,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Drydock]:
    tmp = tmp_path_factory.mktemp("drydock-ironic")
    images = ironic_server.images
    conf = make_conf(tmp, ironic={"url": ironic_server.url, "poll_interval": 0.2,
                                  "power_timeout": 40, "lock_backoff": 0.2,
                                  "kernel_url": f"file://{images}/kernel",
                                  "ramdisk_url": f"file://{images}/ramdisk"},
                     oob={"poll_interval": 0.2, "request_timeout": 5.0})
    docs = site.design_documents()
    maas = FakeMaas([d["metadata"]["name"] for d in docs
                     if d["schema"] == "drydock/BaremetalNode/v1"])
    runtime = build_runtime(conf, maas=maas, labeller=FakeLabeller())
    app = create_app(conf, Deps(runtime=runtime))
    app.berth_spec.authenticator = TOKENS
    try:
        yield Drydock(falcon.testing.TestClient(app), runtime, maas,
                      designs.write(tmp / "ironic.yaml", with_provisioner(docs, "ironic")),
                      designs.write(tmp / "maas.yaml", with_provisioner(docs, None)))
    finally:
        runtime.stop()
        runtime.pool.shutdown(wait=False, cancel_futures=True)


def managed(client: IronicClient, site: Site, name: str, power: str) -> None:
    """`name` enrolled anew, manageable, powered as asked (through Ironic)."""
    fresh(client, site, name)
    client.manage(name)
    client.power(name, power)


def test_node_views_and_filters_read_the_designs_provisioner(
        drydock: Drydock, client: IronicClient, site: Site) -> None:
    managed(client, site, "node05", "power off")
    seen = client.get("node05")
    view = drydock.call("GET", "/nodes/node05", drydock.ironic_ref).json
    assert view["provisioner"] == "ironic"
    assert view["maas_system_id"] == seen.uuid and view["maas_status"] == "New"  # manageable
    assert view["power_state"] == "off" and site_power(site, "node05") == "off"
    from_maas = drydock.call("GET", "/nodes/node05", drydock.maas_ref).json
    assert from_maas["provisioner"] == "maas" and from_maas["maas_status"] == "Deployed"
    assert from_maas["maas_system_id"] != seen.uuid  # the same name, MAAS's machine
    listed = {n["hostname"]: n for n in drydock.call("GET", "/nodes", drydock.ironic_ref).json}
    assert listed["node05"]["maas_status"] == "New" and listed["node05"]["power_state"] == "off"
    # a task's node_filter selects design nodes; its steps read the node in Ironic
    resp = drydock.call("POST", "/tasks", drydock.ironic_ref, {
        "action": "verify_nodes", "design_ref": drydock.ironic_ref,
        "node_filter": {"filter_set": [{"node_names": ["node05"]}]}})
    assert resp.status_code == 201, resp.text
    worker = drydock.runtime.new_worker("verify")
    worker.poll_once()
    worker.join(60)
    tree = drydock.api.simulate_get(f"{P}/tasks/{resp.json['task_id']}", headers=ADMIN,
                                    params={"layers": "-1"}).json
    text = json.dumps(tree)
    assert tree[tree["init_task_id"]]["result"]["status"] == "success", text
    assert "Ironic status New" in text and "power off" in text
    assert drydock.maas.calls[("find", "node05")] == 1  # only the MAAS design's view


def test_the_wipe_plan_reads_the_machine_in_the_designs_provisioner(
        drydock: Drydock, client: IronicClient, site: Site) -> None:
    fresh(client, site, "node03")  # ipmi: no BMC erase, the wipe is left to the provisioner
    client.manage("node03")
    plans = {ref: drydock.call("POST", "/wipeplan", ref, {
        "design_ref": ref, "node_names": ["node03"]}).json[0]
        for ref in (drydock.ironic_ref, drydock.maas_ref)}
    assert plans[drydock.maas_ref]["maas_status"] == "Deployed"  # MAAS releases with erase
    assert plans[drydock.ironic_ref]["maas_status"] == "New"  # Ironic: manageable
    assert plans[drydock.ironic_ref]["refusal"]


def reboot_until_done(drydock: Drydock, name: str, before: str | None,
                      timeout: float = 150.0) -> dict[str, Any]:
    """Run the reconciler's passes until the node's reboot ended (powered on again: its
    last_powered_on moved on from `before`)."""
    deadline = time.monotonic() + timeout
    view: dict[str, Any] = {}
    while time.monotonic() < deadline:
        drydock.runtime.reconciler.pass_once()
        view = drydock.call("GET", f"/nodes/{name}/reboot", drydock.ironic_ref).json
        if not view["requests"] and view["last_powered_on"] not in (None, before):
            return view
        time.sleep(0.5)
    raise AssertionError(f"reboot of {name} did not end: {view}")


@pytest.mark.parametrize(("mode", "bmc_op", "outcome"), [
    ("soft", "graceful_shutdown", "graceful"), ("hard", "power_off", "hard")])
def test_a_reboot_request_powers_the_node_off_and_on_through_ironic(
        drydock: Drydock, client: IronicClient, site: Site, mode: str, bmc_op: str,
        outcome: str) -> None:
    managed(client, site, "node04", "power on")
    soft, hard = (bmc_calls(site, "redfish", op, "node04")
                  for op in ("graceful_shutdown", "power_off"))
    body: dict[str, Any] = {"mode": mode}
    if mode == "soft":
        body["grace_period"] = 120  # Ironic finishes the soft power off itself
    before = drydock.call("GET", "/nodes/node04/reboot", drydock.ironic_ref).json
    resp = drydock.call("POST", "/nodes/node04/reboot", drydock.ironic_ref, body)
    assert resp.status_code in (200, 201), resp.text
    view = reboot_until_done(drydock, "node04", before["last_powered_on"])
    got = view["last_power_off"]
    assert got["outcome"] == outcome, got
    assert bmc_calls(site, "redfish", "graceful_shutdown", "node04") \
        == soft + (mode == "soft")
    assert bmc_calls(site, "redfish", "power_off", "node04") == hard + (mode == "hard")
    assert bmc_calls(site, "redfish", bmc_op, "node04") >= 1
    node = client.get("node04")
    assert node.power_state == "power on" and node.target_power_state is None
    assert site_power(site, "node04") == "on"
    assert view["reboot_error"] is None


def test_retire_and_unretire_set_ironics_retired_fields(
        drydock: Drydock, client: IronicClient, site: Site) -> None:
    managed(client, site, "node06", "power off")
    resp = drydock.call("PATCH", "/nodes/node06", drydock.ironic_ref,
                        {"retired": True, "retired_reason": "end of warranty"})
    assert resp.status_code == 200, resp.text
    assert resp.json["retired"] is True and resp.json["retired_reason"] == "end of warranty"
    node = client.get("node06")
    assert node.retired is True and node.retired_reason == "end of warranty"
    retired = drydock.call("GET", "/nodes", drydock.ironic_ref, retired="true").json
    assert [n["hostname"] for n in retired] == ["node06"]
    listed = client._request("GET", "/nodes?retired=True&fields=name")["nodes"]
    assert [n["name"] for n in listed] == ["node06"]  # Ironic's own ?retired= filter
    # spec 003: a retired node is not provided (409), and is not moved to available
    provide = drydock.call("POST", "/nodes/node06/provide", drydock.ironic_ref)
    assert provide.status_code == 409 and provide.json["reason"] == "NodeRetired"
    assert client.get("node06").provision_state == "manageable"
    resp = drydock.call("PATCH", "/nodes/node06", drydock.ironic_ref, {"retired": False})
    assert resp.status_code == 200 and resp.json["retired"] is False
    node = client.get("node06")
    assert node.retired is False and not node.retired_reason


def test_retiring_an_available_ironic_node_is_refused_and_changes_nothing(
        drydock: Drydock, client: IronicClient, site: Site) -> None:
    managed(client, site, "node06", "power off")
    client.provide("node06")  # available (spec 003: may not be retired)
    resp = drydock.call("PATCH", "/nodes/node06", drydock.ironic_ref,
                        {"retired": True, "retired_reason": "moved"})
    assert resp.status_code == 409, resp.text
    assert client.get("node06").retired is False
    view = drydock.call("GET", "/nodes/node06", drydock.ironic_ref).json
    assert view["retired"] is False and view["maas_status"] == "Ready"


def test_health_lists_both_provisioners(drydock: Drydock) -> None:
    names = [check().get("name") for check in drydock.runtime.dependency_checks()]
    assert names == ["ironic", "maas"]
