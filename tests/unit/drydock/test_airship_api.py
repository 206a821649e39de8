"""Drydock answers the requests Airship's drydock client sends, in the shapes it reads
(python/drydock_provisioner/drydock_client/client.py, control/tasks.py, nodes.py,
validation.py, objects/task.py, objects/builddata.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from drydock_api.drivers.ports import MaasError, ScriptResult
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post, run_all

DAY = 86400.0


@pytest.fixture(params=["sqlite", "postgresql"])
def dd(request: pytest.FixtureRequest, make_site: SiteFactory,
       tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    """Drydock's API on fakes, its database SQLite or PostgreSQL (purge and build data are
    queries of their own)."""
    url = None if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))
    site = make_site(["n1", "n2", "n3"], clock=FakeClock(), url=url)
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def airship_task(site: Site, action: str = "verify_nodes", **over: Any) -> dict[str, Any]:
    """The body DrydockClient.create_task sends for `drydock task create -n n1 -r ''`."""
    return {"action": action, "design_ref": site.href,
            "node_filter": {"filter_set_type": "intersection",
                            "filter_set": [{"filter_type": "union", "node_names": ["n1"],
                                            "rack_names": []}]}, **over}


def get(client: falcon.testing.TestClient, path: str, **params: Any) -> Any:
    return client.simulate_get(path, headers=ADMIN, params=params or None)


def run_task(client: falcon.testing.TestClient, site: Site, **body: Any) -> dict[str, Any]:
    resp = post(client, "/api/v1.0/tasks", airship_task(site, **body))
    assert resp.status_code == 201, resp.text
    run_all(site)
    done: dict[str, Any] = get(client, f"/api/v1.0/tasks/{resp.json['task_id']}").json
    return done


# --- tasks --------------------------------------------------------------------------------
def test_airship_task_body_is_accepted_and_answered_with_the_fields_its_client_reads(dd):
    client, site = dd
    resp = post(client, "/api/v1.0/tasks", airship_task(site))
    assert resp.status_code == 201, resp.text
    task = resp.json
    assert task["kind"] == "Task" and task["result"]["kind"] == "Status"
    assert task["status"] == "queued" and task["action"] == "verify_nodes"
    assert task["design_ref"] == site.href and task["created"] and task["updated"]
    assert task["node_filter"]["filter_set"][0]["node_names"] == ["n1"]
    run_all(site)
    done = get(client, f"/api/v1.0/tasks/{task['task_id']}").json
    # Airship's TaskCreate --block stops on status complete|terminated (lowercase)
    assert done["status"] == "complete"
    assert done["result"]["status"] == "success"
    assert done["result"]["successes"] == ["n1"] and done["result"]["failures"] == []
    assert done["result"]["details"]["errorCount"] == 0
    assert len(done["subtask_id_list"]) == 1


def test_task_envelope_kind_and_api_version_are_accepted_when_they_name_a_task(dd):
    client, site = dd
    ok = post(client, "/api/v1.0/tasks", airship_task(site, kind="Task", apiVersion="v1"))
    assert ok.status_code == 201, ok.text
    bad = post(client, "/api/v1.0/tasks", airship_task(site, kind="Node", api_version="v2"))
    assert bad.status_code == 400
    text = [m["message"] for m in bad.json["details"]["messageList"]]
    assert "kind must be Task" in text and "api_version must be v1 or v1.0" in text


def test_failed_node_gives_result_failure_with_the_node_in_failures(dd):
    client, site = dd
    site.oob.unreachable.add(site.address("n1"))
    done = run_task(client, site)
    assert done["status"] == "complete" and done["result"]["status"] == "failure"
    assert done["result"]["failures"] == ["n1"] and done["result"]["details"]["errorCount"]


# --- nodes --------------------------------------------------------------------------------
def test_node_list_carries_airship_fields_from_maas_and_null_where_maas_has_none(dd):
    client, site = dd
    sid = "id-n1"
    site.maas.machines[sid] = dataclasses.replace(
        site.maas.machines[sid], cpu_count=16, memory=65536, mac="52:54:00:00:00:01",
        boot_ip="10.0.0.11")
    del site.maas.machines["id-n3"]
    nodes = {n["hostname"]: n for n in get(client, "/api/v1.0/nodes",
                                           design_ref=site.href).json}
    n1, n2, n3 = nodes["n1"], nodes["n2"], nodes["n3"]
    assert (n1["cpu_count"], n1["memory"], n1["boot_mac"], n1["boot_ip"]) == (
        16, 65536, "52:54:00:00:00:01", "10.0.0.11")
    assert n1["status_name"] == "Deployed" and n1["power_state"] in ("on", "off")
    assert n1["power_address"] == site.address("n1") and isinstance(n1["tags"], list)
    # MAAS knows n2 without hardware facts, and n3 not at all: null, never a guess
    assert (n2["cpu_count"], n2["memory"], n2["boot_mac"], n2["boot_ip"]) == (None,) * 4
    assert n3["status_name"] is None and n3["memory"] is None and n3["cpu_count"] is None


# --- task purge ---------------------------------------------------------------------------
def test_delete_tasks_purges_only_tasks_finished_more_than_days_ago(dd):
    client, site = dd
    clock = site.clock
    assert clock is not None
    old = run_task(client, site)
    clock.advance(10 * DAY)
    recent = run_task(client, site)
    active = post(client, "/api/v1.0/tasks", airship_task(site, node_filter={
        "filter_set": [{"node_names": ["n2"]}]})).json  # queued, never run
    clock.advance(10 * DAY)  # the active task is 10 days old too
    resp = client.simulate_delete("/api/v1.0/tasks", headers=ADMIN, params={"days": "15"})
    assert resp.status_code == 200, resp.text
    assert resp.json["message"] == "Tables purged successfully."
    assert resp.json["details"]["task_ids"] == [old["task_id"]]
    assert resp.json["details"]["purged_rows"] == 1 + 1 + 2  # task, node subtask, 2 steps
    assert get(client, f"/api/v1.0/tasks/{old['task_id']}").status_code == 404
    assert get(client, f"/api/v1.0/tasks/{old['subtask_id_list'][0]}").status_code == 404
    for kept in (recent, active):
        assert get(client, f"/api/v1.0/tasks/{kept['task_id']}").status_code == 200
    everything = client.simulate_delete("/api/v1.0/tasks", headers=ADMIN,
                                        params={"days": "0"})
    assert everything.json["details"]["task_ids"] == [recent["task_id"]]
    listed = [t["task_id"] for t in get(client, "/api/v1.0/tasks").json]
    assert listed == [active["task_id"]]
    entries = get(client, "/api/v1.0/audit", stream="drydock.tasks", limit="1000").json
    purged = [(e["object"], e["user"], e["old"]) for e in entries["entries"]
              if e["change"] == "purged"]
    assert purged == [(f"task/{old['task_id']}", "admin", "complete"),
                      (f"task/{recent['task_id']}", "admin", "complete")]
    assert client.simulate_get("/api/v1.0/audit/verify", headers=ADMIN).status_code == 200


@pytest.mark.parametrize("days", ["-1", "ten", "1.5", "99999"])
def test_delete_tasks_with_bad_days_is_400_and_removes_nothing(dd, days):
    client, site = dd
    task = run_task(client, site)
    resp = client.simulate_delete("/api/v1.0/tasks", headers=ADMIN, params={"days": days})
    assert resp.status_code == 400 and resp.json["details"]["errorCount"] == 1
    assert get(client, f"/api/v1.0/tasks/{task['task_id']}").status_code == 200


def test_delete_tasks_needs_the_admin_rule(dd):
    client, _ = dd
    resp = client.simulate_delete("/api/v1.0/tasks", headers={"X-Auth-Token": "reader"},
                                  params={"days": "0"})
    assert resp.status_code == 403


# --- build data ---------------------------------------------------------------------------
def test_node_build_data_lists_what_each_step_recorded(dd):
    client, site = dd
    assert get(client, "/api/v1.0/nodes/n1/builddata").status_code == 404
    first = run_task(client, site)
    site.clock.advance(60)  # type: ignore[union-attr]
    second = run_task(client, site)
    items = get(client, "/api/v1.0/nodes/n1/builddata").json
    trees = [get(client, f"/api/v1.0/tasks/{t['task_id']}", layers="-1").json
             for t in (first, second)]
    assert [(i["generator"], i["task_id"] in trees[1]) for i in items] == [
        ("verify_nodes:verify_oob", False), ("verify_nodes:verify_maas", False),
        ("verify_nodes:verify_oob", True), ("verify_nodes:verify_maas", True)]
    assert all(i["task_id"] in trees[0] for i in items[:2])
    assert {i["node_name"] for i in items} == {"n1"}
    assert all(i["data_format"] == "application/json" for i in items)
    assert items[1]["data_element"] == '{"maas_status": "Deployed"}'
    latest = get(client, "/api/v1.0/nodes/n1/builddata", latest="true").json
    assert [i["generator"] for i in latest] == ["verify_nodes:verify_oob",
                                                "verify_nodes:verify_maas"]
    assert [i["task_id"] for i in latest] == [i["task_id"] for i in items[2:]]
    assert get(client, "/api/v1.0/nodes/n2/builddata").status_code == 404


def test_node_build_data_carries_maas_commissioning_results(dd):
    client, site = dd
    sid = "id-n2"
    site.maas.results[sid] = [ScriptResult("00-maas-07-block-devices", 0,
                                           "2026-11-27T10:00:00.123", '[{"NAME": "sda"}]')]
    items = get(client, "/api/v1.0/nodes/n2/builddata").json
    assert [(i["generator"], i["task_id"], i["data_format"], i["collected_date"])
            for i in items] == [("commission:00-maas-07-block-devices", None, "text/plain",
                                 "2026-11-27T10:00:00.123000+00:00")]
    assert items[0]["data_element"] == '[{"NAME": "sda"}]'
    site.maas.machines[sid] = dataclasses.replace(site.maas.machines[sid],
                                                  status_name="Ready")
    task = run_task(client, site, action="prepare_nodes",
                    node_filter={"filter_set": [{"node_names": ["n2"]}]})
    assert task["result"]["status"] == "success", task["result"]
    items = get(client, "/api/v1.0/nodes/n2/builddata").json
    commission = next(i for i in items if i["generator"] == "prepare_nodes:commission")
    script = next(i for i in items if i["generator"].startswith("commission:"))
    assert script["task_id"] == commission["task_id"]
    assert script in get(client, f"/api/v1.0/tasks/{task['task_id']}/builddata").json
    tree = get(client, f"/api/v1.0/tasks/{task['task_id']}", builddata="true",
               layers="-1").json
    assert script in tree[commission["task_id"]]["build_data"]

    def refuse(system_id: str) -> list[ScriptResult]:
        raise MaasError("MAAS refused GET /commissioning-results/ (503)")

    site.maas.commissioning_results = refuse  # type: ignore[method-assign]
    left = get(client, "/api/v1.0/nodes/n2/builddata").json  # MAAS down: the steps' items
    assert left and not any(i["generator"].startswith("commission:") for i in left)


def test_task_build_data_route_and_builddata_parameter(dd):
    client, site = dd
    task = run_task(client, site)
    items = get(client, f"/api/v1.0/tasks/{task['task_id']}/builddata").json
    assert [i["generator"] for i in items] == ["verify_nodes:verify_oob",
                                               "verify_nodes:verify_maas"]
    node_task = task["subtask_id_list"][0]
    assert get(client, f"/api/v1.0/tasks/{node_task}/builddata").json == items
    with_bd = get(client, f"/api/v1.0/tasks/{task['task_id']}", builddata="true").json
    assert with_bd["build_data"] == items and with_bd["task_id"] == task["task_id"]
    assert "build_data" not in get(client, f"/api/v1.0/tasks/{task['task_id']}").json
    tree = get(client, f"/api/v1.0/tasks/{task['task_id']}", builddata="true",
               layers="-1").json
    assert tree["init_task_id"] == task["task_id"]
    assert tree[task["task_id"]]["build_data"] == items
    assert tree[node_task]["build_data"] == items
    steps = [k for k in tree if k not in ("init_task_id", task["task_id"], node_task)]
    assert sorted(i["task_id"] for i in items) == sorted(steps)
    assert all([i["task_id"] for i in tree[s]["build_data"]] == [s] for s in steps)
    validate = run_task(client, site, action="validate_design", node_filter=None)
    assert get(client, f"/api/v1.0/tasks/{validate['task_id']}/builddata").status_code == 404
    assert get(client, "/api/v1.0/tasks/no-such-task/builddata").status_code == 404


# --- node filter and design validation ----------------------------------------------------
def test_nodefilter_in_airship_shape(dd):
    client, site = dd
    every = post(client, "/api/v1.0/nodefilter", {"node_filter": None,
                                                  "design_ref": site.href})
    assert every.status_code == 200 and every.json == ["n1", "n2", "n3"]
    some = post(client, "/api/v1.0/nodefilter", {
        "design_ref": site.href, "node_filter": {"filter_set_type": "union", "filter_set": [
            {"filter_type": "union", "node_names": ["n2", "n3"]}]}})
    assert some.json == ["n2", "n3"]
    missing = post(client, "/api/v1.0/nodefilter", {"node_filter": None})
    assert missing.status_code == 400


def test_validatedesign_in_airship_shape(dd):
    client, site = dd
    ok = post(client, "/api/v1.0/validatedesign", {"rel": "design", "href": site.href,
                                                   "type": "application/x-yaml"})
    assert ok.status_code == 200, ok.text
    assert (ok.json["kind"], ok.json["status"], ok.json["code"]) == ("Status", "Success", 200)
    assert ok.json["details"]["errorCount"] == 0
    assert all(m["kind"] == "ValidationMessage" for m in ok.json["details"]["messageList"])
    missing = post(client, "/api/v1.0/validatedesign", {"rel": "design"})
    assert missing.status_code == 400 and missing.json["status"] == "Failure"
