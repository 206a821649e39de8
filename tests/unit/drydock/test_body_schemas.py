"""Drydock's request bodies are checked against the schemas of its OpenAPI document: a body
with several problems is one 400 naming each of them, and nothing is changed."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import TOKENS
from tests.unit.drydock.test_bootactions import B, deployed, key_of  # noqa: F401

P = "/api/v1.0"


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def send(client: falcon.testing.TestClient, method: str, path: str, body: Any,
         site: Site | None = None, headers: dict[str, str] | None = None) -> Any:
    return client.simulate_request(
        method, f"{P}{path}", body=json.dumps(body),
        params={"design_ref": site.href} if site is not None else None,
        headers={"X-Auth-Token": "admin", "Content-Type": "application/json",
                 **(headers or {})})


def problems(resp: Any, reason: str = "ValidationFailure") -> list[str]:
    assert resp.status_code == 400, resp.text
    assert resp.json["kind"] == "Status" and resp.json["reason"] == reason
    listed = resp.json["details"]["messageList"]
    assert resp.json["details"]["errorCount"] == len(listed)
    return sorted(m["message"] for m in listed)


def test_a_retirement_request_names_every_problem(api: Any) -> None:
    client, site = api
    resp = send(client, "PATCH", "/nodes/n1", {"retired": "yes", "retired_reason": 5, "x": 1},
                site)
    assert problems(resp) == ["retired must be true or false",
                              "retired_reason is only allowed with retired: true",
                              "retired_reason must be a string or null",
                              "unknown field 'x'"]
    assert site.runtime.nodes.retired("n1")[0] is False


def test_a_reboot_request_names_every_problem(api: Any) -> None:
    client, site = api
    resp = send(client, "POST", "/nodes/n1/reboot",
                {"mode": "gentle", "grace_period": -1, "key": "", "when": "now"}, site)
    assert problems(resp) == ["grace_period must be at least 0",
                              "key must be at least 1 characters long",
                              "key must match ^[^/]+$",
                              "mode must be soft or hard", "unknown field 'when'"]
    resp = send(client, "POST", "/nodes/n1/reboot",
                {"mode": "soft", "power_policy": "hard", "grace_period": 3, "key": "a/b"}, site)
    assert problems(resp) == [
        "grace_period is not used with power_policy hard (no graceful shutdown is asked)",
        "key must match ^[^/]+$", "mode soft contradicts power_policy hard: give one"]
    assert send(client, "GET", "/nodes/n1/reboot", None, site).json["requests"] == []


def test_a_wipe_plan_request_names_every_problem(api: Any) -> None:
    client, _ = api
    resp = send(client, "POST", "/wipeplan",
                {"node_names": [], "options": {"erase": "fast"}, "x": 1})
    assert problems(resp) == ["design_ref is required",
                              "node_names must hold at least 1 items",
                              "options.erase must be one of secure, secure_only, quick, zero",
                              "unknown field 'x'"]


def test_a_node_filter_request_names_every_problem(api: Any) -> None:
    client, _ = api
    resp = send(client, "POST", "/nodefilter", {"exclude_retired": "no", "y": 2})
    assert problems(resp) == ["design_ref is required", "exclude_retired must be true or false",
                              "unknown field 'y'"]


def test_a_design_validation_request_without_a_reference_is_refused(api: Any) -> None:
    client, _ = api
    resp = send(client, "POST", "/validatedesign", {"design": "x"})
    assert problems(resp) == [
        "body must be a design reference, or {design_ref: a design reference}"]


def test_a_slot_renewal_names_every_problem(api: Any) -> None:
    client, _ = api
    resp = send(client, "PUT", "/budgets/slots/-bad", {"lease_seconds": 0, "x": 1})
    assert problems(resp) == [
        "holder must be 1-255 characters: letters, digits and ._:@- (starting with a letter "
        "or digit)", "lease_seconds must be at least 1", "unknown field 'x'"]


def test_a_boot_action_report_names_every_problem(deployed: Any) -> None:  # noqa: F811
    client, site = deployed
    action = site.runtime.bootactions.node_view("n1")["bootactions"][0]
    resp = client.simulate_post(f"{B}/{action['action_id']}", body=json.dumps(
        {"status": "done", "details": [{"message": 1}, "text"], "x": 1}),
        headers={"X-Bootaction-Key": key_of(site), "Content-Type": "application/json"})
    assert problems(resp, reason="BadRequest") == [
        "details[0].error is required", "details[0].message must be a string",
        "details[1] must be an object",
        "status must be one of success, failure, Success, Failure", "unknown field 'x'"]
    assert resp.json["message"].startswith("Error processing body")
    view = site.runtime.bootactions.node_view("n1")["bootactions"][0]
    assert view["action_status"] == action["action_status"] and view["details"] == []
