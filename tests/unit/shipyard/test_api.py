"""The /actions routes in-process: codes, bodies, policy, and every 4xx."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

P = "/api/v1.0"
MARKER = "0d5a8f0e-1111-4222-8333-444455556666"


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    app = create_app(conf, harness.deps())
    return falcon.testing.TestClient(app), tokens


def post(client: Any, token: str, body: Any, **kw: Any) -> Any:
    headers = {"X-Auth-Token": token, "Content-Type": "application/json",
               "X-Context-Marker": MARKER, **kw.pop("headers", {})}
    raw = body if isinstance(body, str) else json.dumps(body)
    return client.simulate_post(f"{P}/actions", body=raw, headers=headers, **kw)


def test_create_answers_201_with_the_action_and_its_planned_steps(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], {"name": "redeploy_server",
                                          "parameters": {"target_nodes": "node01"}})
    assert resp.status_code == 201
    body = resp.json
    assert body["state"] == "pending" and body["context_marker"] == MARKER
    assert body["user"] == "admin" and len(body["id"]) == 26
    assert resp.headers["location"] == f"{P}/actions/{body['id']}"
    assert body["steps"][0]["id"] == "preflight"
    listed = client.simulate_get(f"{P}/actions", headers={"X-Auth-Token": tokens["reader"]})
    assert [a["id"] for a in listed.json] == [body["id"]]


def test_action_and_step_are_readable_after_the_run(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    created = post(client, tokens["admin"], {"name": "redeploy_server",
                                             "parameters": {"target_nodes": "node01"}}).json
    harness.drive(created["id"])
    h = {"X-Auth-Token": tokens["reader"]}
    action = client.simulate_get(f"{P}/actions/{created['id']}", headers=h).json
    assert action["action_lifecycle"] == "Complete"
    assert action["command_audit"][0]["command"] == "create"
    step = client.simulate_get(f"{P}/actions/{created['id']}/steps/destroy_nodes.node01",
                               headers=h).json
    assert step["state"] == "success" and step["details"]["task"]["action"] == "destroy_nodes"
    assert step["details"]["tree"]["init_task_id"] == step["output"]["task_id"]


def test_control_pause_and_unpause_answer_202(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    created = post(client, tokens["admin"], {"name": "redeploy_server",
                                             "parameters": {"target_nodes": "node01"}}).json
    h = {"X-Auth-Token": tokens["admin"]}
    resp = client.simulate_post(f"{P}/actions/{created['id']}/control/pause", headers=h)
    assert resp.status_code == 202 and resp.json["state"] == "paused"
    resp = client.simulate_post(f"{P}/actions/{created['id']}/control/unpause", headers=h)
    assert resp.status_code == 202 and resp.json["state"] == "running"


def test_an_action_request_is_checked_against_the_openapi_document(api: Any,
                                                                   harness: Harness) -> None:
    """ActionRequest of schemas/openapi/shipyard.yaml is the check: every way the body
    breaks it is listed in one 400, and nothing is created."""
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], {"name": "redeploy_server", "parameters": "node01",
                                          "plan_id": 7, "colour": "red"})
    assert resp.status_code == 400 and resp.json["reason"] == "BadRequest", resp.json
    listed = [m["message"] for m in resp.json["details"]["messageList"]]
    assert listed == ["unknown field 'colour'", "parameters must be an object or null",
                      "plan_id must be a string"], listed
    assert harness.api.list() == []


@pytest.mark.parametrize(("body", "reason"), [
    ({"name": "nuke_site"}, "UnknownAction"),
    ({"parameters": {}}, "UnknownAction"),
    ({"name": "redeploy_server", "parameters": "node01"}, "BadRequest"),
    ({"name": "redeploy_server", "parameters": {}}, "ValidationFailure"),
    ({"name": "redeploy_server", "parameters": {"target_nodes": "node01,ghost"}},
     "ValidationFailure"),
    ({"name": "redeploy_server", "parameters": {"target_nodes": "node01"}, "x": 1},
     "BadRequest"),
    ([1, 2], "BadRequest"),
    ("{not json", "BadRequest"),
])
def test_bad_create_requests_are_400_and_create_nothing(api: Any, harness: Harness,
                                                        body: Any, reason: str) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], body)
    assert resp.status_code == 400, resp.json
    assert resp.json["reason"] == reason and resp.json["details"]["errorCount"] >= 1
    assert harness.api.list() == []


def test_wrong_content_type_is_415(api: Any, harness: Harness) -> None:
    client, tokens = api
    resp = post(client, tokens["admin"], {"name": "redeploy_server"},
                headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_unauthenticated_is_401_and_reader_may_not_create(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    body = {"name": "redeploy_server", "parameters": {"target_nodes": "node01"}}
    assert post(client, "wrong", body).status_code == 401
    assert post(client, tokens["reader"], body).status_code == 403
    assert post(client, tokens["nobody"], body).status_code == 403
    assert client.simulate_get(f"{P}/actions",
                               headers={"X-Auth-Token": tokens["nobody"]}).status_code == 403
    assert harness.api.list() == []


def test_unknown_action_step_and_verb_are_404(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    created = post(client, tokens["admin"], {"name": "redeploy_server",
                                             "parameters": {"target_nodes": "node01"}}).json
    h = {"X-Auth-Token": tokens["admin"]}
    assert client.simulate_get(f"{P}/actions/01NOPE", headers=h).status_code == 404
    assert client.simulate_get(f"{P}/actions/{created['id']}/steps/nope",
                               headers=h).status_code == 404
    assert client.simulate_post(f"{P}/actions/{created['id']}/control/explode",
                                headers=h).status_code == 404
    assert client.simulate_post(f"{P}/actions/01NOPE/control/pause",
                                headers=h).status_code == 404


def test_conflicts_and_illegal_controls_are_409(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    body = {"name": "redeploy_server", "parameters": {"target_nodes": "node01"}}
    created = post(client, tokens["admin"], body).json
    clash = post(client, tokens["admin"], body)
    assert clash.status_code == 409 and clash.json["reason"] == "ConflictingAction"
    h = {"X-Auth-Token": tokens["admin"]}
    resp = client.simulate_post(f"{P}/actions/{created['id']}/control/unpause", headers=h)
    assert resp.status_code == 409 and resp.json["reason"] == "InvalidStateTransition"


def test_intermediate_commits_are_409_unless_allowed(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit()
    harness.commit()
    refused = post(client, tokens["admin"], {"name": "deploy_site"})
    assert refused.status_code == 409 and refused.json["reason"] == "IntermediateCommits"
    allowed = post(client, tokens["admin"], {"name": "deploy_site", "parameters": {
        "allow-intermediate-commits": "true"}})
    assert allowed.status_code == 201


@pytest.fixture
def status_api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient,
                                                          dict[str, str]]:
    from shipyard_api.actions.statuses import SiteStatuses

    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    statuses = SiteStatuses(harness.drydock, harness.docs, "http://shipyard")
    app = create_app(conf, harness.deps(site_statuses=statuses))
    return falcon.testing.TestClient(app), tokens


def test_site_statuses_list_provisioning_and_power(status_api: Any, harness: Harness) -> None:
    client, tokens = status_api
    rev = harness.commit()
    harness.drydock.node_list = [
        {"hostname": "node01", "maas_status": "Deployed", "power_state": "on", "retired": False},
        {"hostname": "node02", "maas_status": None, "power_state": "off", "retired": True,
         "power_error": None}]
    h = {"X-Auth-Token": tokens["reader"]}
    body = client.simulate_get(f"{P}/site_statuses", headers=h).json
    assert body["nodes-provision-status"] == [
        {"hostname": "node01", "status": "Deployed", "retired": False},
        {"hostname": "node02", "status": "Absent", "retired": True}]
    assert [p["power_state"] for p in body["machines-power-state"]] == ["on", "off"]
    assert harness.drydock.calls[-1].key.endswith(f"/revisions/{rev}/rendered-documents")
    only = client.simulate_get(f"{P}/site_statuses", headers=h,
                               params={"filters": "machines-power-state"}).json
    assert sorted(only) == ["machines-power-state", "machines_powerstate"]
    assert only["machines_powerstate"] == only["machines-power-state"]


def test_site_statuses_unknown_filter_is_400(status_api: Any) -> None:
    client, tokens = status_api
    resp = client.simulate_get(f"{P}/site_statuses", headers={"X-Auth-Token": tokens["admin"]},
                               params={"filters": "disk-colour"})
    assert resp.status_code == 400 and resp.json["reason"] == "InvalidFilter"
    nobody = client.simulate_get(f"{P}/site_statuses",
                                 headers={"X-Auth-Token": tokens["nobody"]})
    assert nobody.status_code == 403
