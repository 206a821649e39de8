"""Drydock's HTTP API on fakes: status codes, bodies and every 4xx."""

from __future__ import annotations

import json
import time
from typing import Any

import falcon.testing
import pytest

from common.auth import Identity, TokenAuthenticator
from common.errors import BadGateway
from drydock_api.app import Deps, create_app
from tests.unit.drydock import designs as D
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf

TOKENS = TokenAuthenticator({"admin": Identity("admin", ("admin",)),
                             "reader": Identity("reader", ("reader",))})
ADMIN = {"X-Auth-Token": "admin"}


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2", "n3"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def post(client: falcon.testing.TestClient, path: str, body: Any,
         headers: dict[str, str] | None = None) -> Any:
    return client.simulate_post(path, body=json.dumps(body),
                                headers={**ADMIN, "Content-Type": "application/json",
                                         **(headers or {})})


def task_request(site: Site, **over: Any) -> dict[str, Any]:
    return {"action": "destroy_nodes", "design_ref": {"rel": "design", "href": site.href,
                                                      "type": "application/x-yaml"},
            "node_filter": {"filter_set_type": "union",
                            "filter_set": [{"node_names": ["n1"]}]}, **over}


def run_all(site: Site) -> None:
    worker = site.runtime.new_worker("w")
    worker.poll_once()
    worker.join(30)


def test_post_task_returns_201_location_and_the_queued_task(api):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site))
    assert resp.status_code == 201
    assert resp.headers["Location"] == f"/api/v1.0/tasks/{resp.json['task_id']}"
    assert resp.json["status"] == "queued" and resp.json["result"]["status"] == "incomplete"
    assert resp.json["action"] == "destroy_nodes" and resp.json["subtask_id_list"] == []


@pytest.mark.parametrize("node_filter", [
    None, {"filter_set_type": "union", "filter_set": [{}]},
    {"filter_set_type": "union", "filter_set": [{"node_names": ["n1"]}, {"node_tags": []}]}])
def test_destroy_without_a_node_filter_is_refused_unless_all_nodes(api, node_filter):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site, node_filter=node_filter))
    assert resp.status_code == 400
    found = " ".join(m["message"] for m in resp.json["details"]["messageList"])
    assert "selects every node of the design" in found and "all_nodes: true" in found
    assert client.simulate_get("/api/v1.0/tasks", headers=ADMIN).json == []
    resp = post(client, "/api/v1.0/tasks", task_request(site, node_filter=node_filter,
                                                        options={"all_nodes": True}))
    assert resp.status_code == 201, resp.json


def test_idempotency_key_returns_the_same_task(api):
    client, site = api
    one = post(client, "/api/v1.0/tasks", task_request(site), {"Idempotency-Key": "abc"})
    two = post(client, "/api/v1.0/tasks", task_request(site), {"Idempotency-Key": "abc"})
    assert one.status_code == 201 and two.status_code == 201  # the original response
    assert two.headers["Idempotent-Replayed"] == "true"
    assert one.json["task_id"] == two.json["task_id"]


@pytest.mark.parametrize("action", ["verify_site", "prepare_site", "prepare_nodes",
                                    "deploy_nodes"])
def test_lifecycle_actions_are_accepted(api, action):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site, action=action))
    assert resp.status_code == 201 and resp.json["action"] == action


@pytest.mark.parametrize("action", ["verify_site", "prepare_nodes", "deploy_nodes"])
def test_lifecycle_actions_refuse_unknown_options(api, action):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site, action=action,
                                                        options={"force": True}))
    assert resp.status_code == 400 and "unknown option" in resp.text


@pytest.mark.parametrize("change,fragment", [
    ({"action": "explode"}, "action must be one of"),
    ({"options": {"erase": "shred"}}, "options.erase"),
    ({"options": {"preserve_local_storage": "yes"}}, "preserve_local_storage"),
    ({"options": {"retired_reason": "x"}}, "only allowed with retire"),
    ({"options": {"colour": 1}}, "unknown option"),
    ({"node_filter": {"filter_set": [{"node_names": "n1"}]}}, "node_names must be a list"),
    ({"node_filter": {"filter_set": [{"node_names": [1]}]}}, "node_names[0] must be a string"),
    ({"design_ref": None}, "design_ref must be a bare href"),
    ({"extra": 1}, "unknown field"),
])
def test_bad_task_requests_get_400_listing_the_problem(api, change, fragment):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site, **change))
    assert resp.status_code == 400
    assert any(fragment in m["message"] for m in resp.json["details"]["messageList"])
    assert client.simulate_get("/api/v1.0/tasks", headers=ADMIN).json == []


def test_a_task_request_is_checked_against_the_openapi_document_every_problem_listed(api):
    """TaskRequest of schemas/openapi/drydock.yaml is the check: each way the body breaks it,
    and what the action itself refuses, in one 400; nothing is created."""
    client, site = api
    body = task_request(site, kind="Job", budget="maybe",
                        node_filter={"filter_set": [{"node_labels": {"rack": 5}}]},
                        options={"preserve_local_storage": "yes", "colour": "red"})
    del body["design_ref"]
    resp = post(client, "/api/v1.0/tasks", body)
    assert resp.status_code == 400 and resp.json["reason"] == "ValidationFailure"
    listed = [m["message"] for m in resp.json["details"]["messageList"]]
    assert listed == [
        "design_ref is required",
        "budget must be wait or refuse",
        "kind must be Task",
        "node_filter.filter_set[0].node_labels.rack must be a string",
        "options: unknown option 'colour' for destroy_nodes",  # the action's words, once
        "options.preserve_local_storage must be true or false",
    ], listed
    assert resp.json["details"]["errorCount"] == len(listed)
    assert client.simulate_get("/api/v1.0/tasks", headers=ADMIN).json == []


def test_unknown_node_names_get_400_listing_them(api):
    client, site = api
    req = task_request(site, node_filter={"filter_set": [{"node_names": ["n1", "nope"]}]})
    resp = post(client, "/api/v1.0/tasks", req)
    assert resp.status_code == 400 and resp.json["reason"] == "UnknownNodes"
    assert "nope" in resp.json["message"]


def test_a_missing_design_file_is_refused_as_one_not_allowed_and_bad_scheme_400(api):
    client, site = api
    missing = site.href.rsplit("/", 1)[0] + "/nonexistent.yaml"
    absent = post(client, "/api/v1.0/tasks", task_request(site, design_ref=missing))
    assert absent.status_code == 400 and absent.json["reason"] == "DesignRefNotAllowed"
    outside = post(client, "/api/v1.0/tasks", task_request(site, design_ref="file:///etc/hosts"))
    assert outside.status_code == 400 and outside.json["reason"] == "DesignRefNotAllowed"
    assert post(client, "/api/v1.0/tasks",
                task_request(site, design_ref="ftp://x/y")).status_code == 400


def test_overlapping_task_gets_409(api):
    client, site = api
    assert post(client, "/api/v1.0/tasks", task_request(site)).status_code == 201
    resp = post(client, "/api/v1.0/tasks", task_request(site, node_filter=None,
                                                        options={"all_nodes": True}))
    assert resp.status_code == 409 and resp.json["reason"] == "NodesBusy"


def test_malformed_json_wrong_type_and_non_object_bodies(api):
    client, _ = api
    bad = client.simulate_post("/api/v1.0/tasks", body="{nope",
                               headers={**ADMIN, "Content-Type": "application/json"})
    assert bad.status_code == 400
    wrong = client.simulate_post("/api/v1.0/tasks", body="a: 1",
                                 headers={**ADMIN, "Content-Type": "text/plain"})
    assert wrong.status_code == 415
    assert post(client, "/api/v1.0/tasks", [1, 2]).status_code == 400


def test_reader_may_list_but_not_create(api):
    client, site = api
    resp = post(client, "/api/v1.0/tasks", task_request(site), {"X-Auth-Token": "reader"})
    assert resp.status_code == 403
    assert client.simulate_get("/api/v1.0/tasks",
                               headers={"X-Auth-Token": "reader"}).status_code == 200


def test_task_tree_layers_and_subtask_errors(api):
    client, site = api
    site.oob.unreachable.add(site.address("n2"))
    task_id = post(client, "/api/v1.0/tasks", task_request(
        site, node_filter=None, options={"all_nodes": True})).json["task_id"]
    run_all(site)
    top = client.simulate_get(f"/api/v1.0/tasks/{task_id}", headers=ADMIN).json
    assert top["status"] == "complete" and top["result"]["status"] == "partial_success"
    assert len(top["subtask_id_list"]) == 3
    two = client.simulate_get(f"/api/v1.0/tasks/{task_id}", params={"layers": 2},
                              headers=ADMIN).json
    assert two["init_task_id"] == task_id and len(two) == 1 + 1 + 3
    nodes = {two[s]["node"]: two[s] for s in top["subtask_id_list"]}
    assert nodes["n2"]["result"]["failures"] == ["n2"]
    everything = client.simulate_get(f"/api/v1.0/tasks/{task_id}", params={"layers": -1},
                                     headers=ADMIN).json
    steps = [t for k, t in everything.items() if k != "init_task_id" and t["step"]]
    assert {s["step"] for s in steps} == {"plan_wipe", "power_off", "wipe_disks", "release",
                                         "delete", "forget", "report_disks"}
    errs = client.simulate_get(f"/api/v1.0/tasks/{task_id}", params={"subtaskerrors": "true"},
                               headers=ADMIN).json["subtask_errors"]
    assert errs and all(m["node"] == "n2" for e in errs.values()
                        for m in e["details"]["messageList"])


def test_bad_query_parameters_get_400(api):
    client, _ = api
    for params in ({"status": "sleeping"}, {"action": "x"}, {"since": "yesterday"},
                   {"limit": "0"}):
        assert client.simulate_get("/api/v1.0/tasks", params=params,
                                   headers=ADMIN).status_code == 400
    assert client.simulate_get("/api/v1.0/tasks/x", params={"layers": "many"},
                               headers=ADMIN).status_code == 400


def test_list_filters_and_paginates(api):
    client, site = api
    ids = [post(client, "/api/v1.0/tasks", task_request(
        site, node_filter={"filter_set": [{"node_names": [n]}]})).json["task_id"]
        for n in ("n1", "n2", "n3")]
    page = client.simulate_get("/api/v1.0/tasks", params={"limit": 2}, headers=ADMIN)
    assert [t["task_id"] for t in page.json] == [ids[2], ids[1]]
    rest = client.simulate_get("/api/v1.0/tasks", params={
        "limit": 2, "marker": page.headers["X-Next-Marker"]}, headers=ADMIN)
    assert [t["task_id"] for t in rest.json] == [ids[0]]
    queued = client.simulate_get("/api/v1.0/tasks", params={"status": "queued,running",
                                                             "action": "destroy_nodes"},
                                 headers=ADMIN)
    assert len(queued.json) == 3
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assert client.simulate_get("/api/v1.0/tasks", params={"since": since},
                               headers=ADMIN).json == []


def test_terminate_and_unknown_task(api):
    client, site = api
    task_id = post(client, "/api/v1.0/tasks", task_request(site)).json["task_id"]
    resp = client.simulate_post(f"/api/v1.0/tasks/{task_id}/terminate", headers=ADMIN)
    assert resp.status_code == 200 and resp.json["status"] == "terminated"
    again = client.simulate_post(f"/api/v1.0/tasks/{task_id}/terminate", headers=ADMIN)
    assert again.status_code == 409
    assert client.simulate_get("/api/v1.0/tasks/nope", headers=ADMIN).status_code == 404
    assert client.simulate_post("/api/v1.0/tasks/nope/terminate",
                                headers=ADMIN).status_code == 404


def test_nodefilter_resolves_names_and_refuses_unknown(api):
    client, site = api
    ok = post(client, "/api/v1.0/nodefilter", {"design_ref": site.href, "node_filter": {
        "filter_set_type": "union", "filter_set": [{"node_names": ["n3", "n1"]}]}})
    assert ok.status_code == 200 and ok.json == ["n1", "n3"]
    assert post(client, "/api/v1.0/nodefilter", {"design_ref": site.href,
                                                 "node_filter": None}).json == ["n1", "n2", "n3"]
    bad = post(client, "/api/v1.0/nodefilter", {"design_ref": site.href, "node_filter": {
        "filter_set": [{"node_names": ["n9"]}]}})
    assert bad.status_code == 400 and "n9" in bad.json["message"]
    assert post(client, "/api/v1.0/nodefilter", {"node_filter": None}).status_code == 400


def test_validatedesign_accepts_href_and_lists_problems(api, tmp_path):
    client, site = api
    ok = post(client, "/api/v1.0/validatedesign", {"href": site.href})
    assert ok.status_code == 200 and ok.json["status"] == "Success"
    broken = D.node("b1", profile_name="missing")
    broken["data"]["storage"] = {"physical_devices": {"sda": {"partitions": []}}}
    docs = [D.profile(), D.passphrase(), broken, D.node("b1")]
    href = D.write(tmp_path / "bad.yaml", docs)
    bad = post(client, "/api/v1.0/validatedesign",
               {"rel": "design", "href": href, "type": "application/x-yaml"})
    assert bad.status_code == 400
    names = {m["name"] for m in bad.json["details"]["messageList"]}
    assert {"UnknownHostProfile", "NoOsDisk", "DuplicateNode"} <= names
    assert all(m["kind"] == "ValidationMessage" for m in bad.json["details"]["messageList"])
    assert post(client, "/api/v1.0/validatedesign", {}).status_code == 400


def test_nodes_merge_design_maas_and_power(api):
    client, site = api
    post(client, "/api/v1.0/tasks", task_request(site))
    run_all(site)
    nodes = {n["hostname"]: n for n in client.simulate_get("/api/v1.0/nodes",
                                                           headers=ADMIN).json}
    assert set(nodes) == {"n1", "n2", "n3"}
    assert nodes["n1"]["maas_status"] is None and nodes["n1"]["power_state"] == "off"
    assert nodes["n2"]["maas_status"] == "Deployed" and nodes["n2"]["power_state"] == "on"
    assert nodes["n1"]["last_task_id"] and nodes["n2"]["oob_type"] == "redfish"
    one = client.simulate_get("/api/v1.0/nodes/n2", headers=ADMIN)
    assert one.status_code == 200 and one.json["rack"] == "rack01"
    assert client.simulate_get("/api/v1.0/nodes/zz", headers=ADMIN).status_code == 404


def test_extended_health_reports_database_and_maas(make_site: SiteFactory, tmp_path: Any):
    site = make_site(["n1"])
    app = create_app(make_conf(tmp_path), Deps(
        runtime=site.runtime, health_checks=site.runtime.health_checks(),
        dependency_checks=site.runtime.dependency_checks()))
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    assert client.simulate_get("/api/v1.0/health").status_code == 204
    body = client.simulate_get("/api/v1.0/health/extended", headers=ADMIN).json
    assert {m["name"] for m in body["details"]["messageList"]} == {"database", "maas"}


def test_maas_outage_shows_in_extended_health_but_keeps_the_api_ready(
        make_site: SiteFactory, tmp_path: Any):
    site = make_site(["n1"])

    def maas_down() -> Any:
        raise BadGateway("MAAS unreachable: connection refused")

    site.maas.check = maas_down  # type: ignore[method-assign]
    app = create_app(make_conf(tmp_path), Deps(
        runtime=site.runtime, health_checks=site.runtime.health_checks(),
        dependency_checks=site.runtime.dependency_checks()))
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    assert client.simulate_get("/api/v1.0/health").status_code == 204
    body = client.simulate_get("/api/v1.0/health/extended", headers=ADMIN).json
    assert body["code"] == 503
    maas = [m for m in body["details"]["messageList"] if m["name"] == "maas"][0]
    assert maas["error"] and "connection refused" in maas["message"]


def test_wrong_method_oversize_body_and_unknown_route(api, tmp_path):
    client, site = api
    assert client.simulate_put("/api/v1.0/tasks", headers=ADMIN).status_code == 405
    assert client.simulate_get("/api/v1.0/taskz", headers=ADMIN).status_code == 404
    limited = make_conf(tmp_path)
    limited.set_override("max_body_bytes", 100, group="api")
    app = create_app(limited, Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    big = falcon.testing.TestClient(app).simulate_post(
        "/api/v1.0/tasks", body=json.dumps(task_request(site, options={"x": "y" * 500})),
        headers={**ADMIN, "Content-Type": "application/json"})
    assert big.status_code == 413 and big.json["kind"] == "Status"


def test_wipe_plan_names_each_disk_or_why_a_node_is_refused(api):
    client, site = api
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    body = {"design_ref": {"rel": "design", "href": site.href, "type": "application/x-yaml"},
            "node_names": ["n1", "n2"], "options": {"preserve_local_storage": True}}
    resp = post(client, "/api/v1.0/wipeplan", body)
    assert resp.status_code == 200, resp.json
    n1, n2 = resp.json
    assert n1["refusal"] is None and n1["disks"] == [
        {"disk": "sda", "result": "wiped", "method": "redfish Drive.SecureErase"},
        {"disk": "sdb", "result": "kept", "method": None}]
    assert n2["node"] == "n2" and "erase the OS disk sda alone" in n2["refusal"]
    assert site.oob.calls[("graceful", site.address("n2"))] == 0
    bad = post(client, "/api/v1.0/wipeplan", {**body, "options": {"erase": "paranoid"}})
    assert bad.status_code == 400
    unknown = post(client, "/api/v1.0/wipeplan", {**body, "node_names": ["ghost"]})
    assert unknown.status_code == 400
