"""Retirement, provide and reboot-request endpoints over HTTP on fakes: codes and bodies."""

from __future__ import annotations

import dataclasses
import gzip
import json
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import TOKENS, post, run_all

P = "/api/v1.0"


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2", "n3"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def patch(client: falcon.testing.TestClient, site: Any, name: str, body: Any,
          token: str = "admin") -> Any:
    return client.simulate_patch(f"{P}/nodes/{name}", params={"design_ref": site.href},
                                 body=json.dumps(body),
                                 headers={"X-Auth-Token": token,
                                          "Content-Type": "application/json"})


def call(client: falcon.testing.TestClient, method: str, path: str, site: Any,
         body: Any = None, token: str = "admin", **params: str) -> Any:
    kwargs: dict[str, Any] = {"params": {"design_ref": site.href, **params},
                              "headers": {"X-Auth-Token": token,
                                          "Content-Type": "application/json"}}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    return client.simulate_request(method, f"{P}{path}", **kwargs)


def destroy(client: falcon.testing.TestClient, site: Any, name: str, **options: Any) -> None:
    resp = post(client, f"{P}/tasks", {"action": "destroy_nodes", "design_ref": site.href,
                                       "node_filter": {"filter_set": [{"node_names": [name]}]},
                                       "options": options})
    assert resp.status_code == 201, resp.text
    run_all(site)


def test_retire_a_deployed_node_and_list_by_retirement(api):
    client, site = api
    resp = patch(client, site, "n1", {"retired": True, "retired_reason": "end of warranty"})
    assert resp.status_code == 200
    assert resp.json["retired"] is True and resp.json["retired_reason"] == "end of warranty"
    retired = call(client, "GET", "/nodes", site, retired="true").json
    assert [n["hostname"] for n in retired] == ["n1"]
    active = call(client, "GET", "/nodes", site, retired="false").json
    assert [n["hostname"] for n in active] == ["n2", "n3"]
    assert all("retired_reason" in n for n in active)
    back = patch(client, site, "n1", {"retired": False})
    assert back.status_code == 200 and back.json["retired_reason"] is None


def test_listing_the_retired_nodes_asks_only_their_bmcs(api):
    client, site = api
    patch(client, site, "n2", {"retired": True})
    site.oob.calls.clear()
    retired = call(client, "GET", "/nodes", site, retired="true").json
    assert [(n["hostname"], n["power_state"]) for n in retired] == [("n2", "on")]
    assert [op for op, _ in site.oob.calls.elements()] == ["power_state"]


def test_retiring_a_node_a_task_holds_is_409_and_changes_nothing(api):
    client, site = api
    resp = post(client, f"{P}/tasks", {"action": "prepare_nodes", "design_ref": site.href,
                                       "node_filter": {"filter_set": [{"node_names": ["n2"]}]}})
    assert resp.status_code == 201
    task_id = resp.json["task_id"]
    refused = patch(client, site, "n2", {"retired": True, "retired_reason": "bad disk"})
    assert refused.status_code == 409 and refused.json["reason"] == "NodeBusy"
    text = refused.json["details"]["messageList"][0]["message"]
    assert task_id in text and "n2" in text
    assert site.runtime.nodes.retired("n2") == (False, None)
    run_all(site)
    assert patch(client, site, "n2", {"retired": True}).status_code == 200


@pytest.mark.parametrize("body,fragment", [
    ({}, "retired is required"),
    ({"retired": "yes"}, "retired must be true or false"),
    ({"retired_reason": "x"}, "only allowed with retired: true"),
    ({"retired": False, "retired_reason": "x"}, "only allowed with retired: true"),
    ({"retired": True, "retired_reason": 5}, "retired_reason must be a string"),
    ({"retired": True, "colour": "red"}, "unknown field 'colour'"),
])
def test_bad_retirement_requests_are_400_and_change_nothing(api, body, fragment):
    client, site = api
    resp = patch(client, site, "n1", body)
    assert resp.status_code == 400 and fragment in resp.text
    assert call(client, "GET", "/nodes/n1", site).json["retired"] is False


def test_retiring_a_node_available_for_deployment_is_409(api):
    client, site = api
    site.maas.add("n2", "Ready")
    resp = patch(client, site, "n2", {"retired": True})
    assert resp.status_code == 409 and resp.json["reason"] == "InvalidNodeState"
    assert call(client, "GET", "/nodes/n2", site).json["retired"] is False


def test_destroy_with_retire_then_provide_is_refused_until_unretired(api):
    client, site = api
    destroy(client, site, "n1", retire=True, retired_reason="rack moved")
    node = call(client, "GET", "/nodes/n1", site).json
    assert node["retired"] and node["torn_down"] and node["retired_reason"] == "rack moved"
    assert site.oob.power[site.address("n1")] == "off"
    refused = call(client, "POST", "/nodes/n1/provide", site)
    assert refused.status_code == 409 and refused.json["reason"] == "NodeRetired"
    assert patch(client, site, "n1", {"retired": False}).status_code == 200
    provided = call(client, "POST", "/nodes/n1/provide", site)
    assert provided.status_code == 200 and provided.json["torn_down"] is False


def test_provide_on_a_node_that_is_not_torn_down_is_409(api):
    client, site = api
    resp = call(client, "POST", "/nodes/n2/provide", site)
    assert resp.status_code == 409 and resp.json["reason"] == "InvalidNodeState"


def test_retired_nodes_are_left_out_of_deployment_node_filters(api):
    client, site = api
    patch(client, site, "n2", {"retired": True})
    body = {"design_ref": site.href, "node_filter": None}
    assert post(client, f"{P}/nodefilter", body).json == ["n1", "n2", "n3"]
    assert post(client, f"{P}/nodefilter", {**body, "exclude_retired": True}).json == [
        "n1", "n3"]
    bad = post(client, f"{P}/nodefilter", {**body, "exclude_retired": "yes"})
    assert bad.status_code == 400


def test_reboot_requests_are_created_replaced_listed_and_released(api):
    client, site = api
    first = call(client, "POST", "/nodes/n1/reboot", site, {"key": "fence", "mode": "hard",
                                                            "value": {"uid": "m-1"}})
    assert first.status_code == 201
    again = call(client, "POST", "/nodes/n1/reboot", site, {"key": "fence", "mode": "soft"})
    assert again.status_code == 200 and again.json["requests"][0]["mode"] == "soft"
    unkeyed = call(client, "POST", "/nodes/n1/reboot", site, {})
    assert unkeyed.status_code == 201
    listed = call(client, "GET", "/nodes/n1/reboot", site, token="reader").json
    assert sorted(str(r["key"]) for r in listed["requests"]) == ["None", "fence"]
    assert {"power_state", "pending_reboot_since", "last_powered_on"} <= set(listed)
    gone = call(client, "DELETE", "/nodes/n1/reboot/fence", site)
    assert gone.status_code == 204
    assert call(client, "DELETE", "/nodes/n1/reboot/fence", site).status_code == 404


@pytest.mark.parametrize("body,fragment", [
    ({"mode": "gentle"}, "mode must be soft or hard"),
    ({"key": ""}, "key must be at least 1 characters long"),
    ({"key": 7}, "key must be a string"),
    ({"key": "a/b"}, "key must match ^[^/]+$"),
    ({"when": "now"}, "unknown field 'when'"),
])
def test_bad_reboot_requests_are_400_and_change_nothing(api, body, fragment):
    client, site = api
    resp = call(client, "POST", "/nodes/n1/reboot", site, body)
    assert resp.status_code == 400 and fragment in resp.text
    assert call(client, "GET", "/nodes/n1/reboot", site).json["requests"] == []


@pytest.mark.parametrize("method,path,body", [
    ("PATCH", "/nodes/nope", {"retired": True}),
    ("POST", "/nodes/nope/provide", None),
    ("POST", "/nodes/nope/reboot", {"mode": "hard"}),
    ("GET", "/nodes/nope/reboot", None),
    ("DELETE", "/nodes/nope/reboot/k", None),
])
def test_unknown_nodes_are_404(api, method, path, body):
    client, site = api
    resp = call(client, method, path, site, body)
    assert resp.status_code == 404 and resp.json["kind"] == "Status"


def test_reboot_of_a_torn_down_node_is_409(api):
    client, site = api
    destroy(client, site, "n3")
    resp = call(client, "POST", "/nodes/n3/reboot", site, {"mode": "hard"})
    assert resp.status_code == 409 and resp.json["reason"] == "InvalidNodeState"


@pytest.mark.parametrize("method,path", [("PATCH", "/nodes/n1"),
                                         ("POST", "/nodes/n1/reboot")])
def test_malformed_and_wrongly_typed_bodies(api, method, path):
    client, site = api
    headers = {"X-Auth-Token": "admin"}
    bad_json = client.simulate_request(method, f"{P}{path}", params={"design_ref": site.href},
                                       body="{not json", headers={
                                           **headers, "Content-Type": "application/json"})
    assert bad_json.status_code == 400
    wrong_type = client.simulate_request(method, f"{P}{path}", body="retired=true",
                                         params={"design_ref": site.href},
                                         headers={**headers, "Content-Type": "text/plain"})
    assert wrong_type.status_code == 415


@pytest.mark.parametrize("method,path", [("PATCH", "/nodes/n1"), ("POST", "/nodes/n1/provide"),
                                         ("POST", "/nodes/n1/reboot"),
                                         ("DELETE", "/nodes/n1/reboot/k")])
def test_readers_may_not_change_nodes(api, method, path):
    client, site = api
    resp = call(client, method, path, site, {"retired": True} if method == "PATCH" else {},
                token="reader")
    assert resp.status_code == 403


def test_bad_retired_filter_is_400(api):
    client, site = api
    resp = call(client, "GET", "/nodes", site, retired="maybe")
    assert resp.status_code == 400 and "retired must be true or false" in resp.text


def test_a_long_node_list_shows_the_power_state_maas_saw_without_asking_each_bmc(
        make_site: SiteFactory, tmp_path: Any):
    site = make_site(["n1", "n2", "n3"], inventory={"live_limit": 2})
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    site.oob.power[site.address("n2")] = "off"  # the BMC knows; MAAS has not seen it yet
    site.maas.machines["id-n3"] = dataclasses.replace(site.maas.machines["id-n3"],
                                                      power_state="off")
    listed = {n["name"]: n["power_state"] for n in call(client, "GET", "/nodes", site).json}
    assert listed == {"n1": "on", "n2": "on", "n3": "off"}
    assert not any(op == "power_state" for op, _ in site.oob.calls)
    assert call(client, "GET", "/nodes/n2", site).json["power_state"] == "off"
    short = call(client, "GET", "/nodes", site, retired="false")  # still 3 nodes: MAAS's view
    assert {n["name"]: n["power_state"] for n in short.json}["n2"] == "on"


def test_a_design_is_parsed_once_while_its_documents_are_cached(make_site: SiteFactory):
    site = make_site(["n1"])
    first = site.runtime.loader.design(site.href)
    assert site.runtime.loader.design(site.href) is first


def test_a_long_node_list_is_encoded_again_once_a_node_record_changes(
        make_site: SiteFactory, tmp_path: Any):
    site = make_site(["n1", "n2", "n3"], inventory={"live_limit": 2})
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    first = call(client, "GET", "/nodes", site)
    assert [n["retired"] for n in first.json] == [False, False, False]
    assert call(client, "GET", "/nodes", site).content == first.content
    site.runtime.nodes.update("n2", retired=True, retired_reason="bench")
    again = call(client, "GET", "/nodes", site).json
    assert [n["retired"] for n in again] == [False, True, False]
    assert [n["name"] for n in call(client, "GET", "/nodes", site, retired="true").json] == ["n2"]
    zipped = client.simulate_get(f"{P}/nodes", params={"design_ref": site.href}, headers={
        "X-Auth-Token": "admin", "Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(zipped.content)) == again
