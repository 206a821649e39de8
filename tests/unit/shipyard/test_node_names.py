"""target_nodes holds node names as Kubernetes defines them: anything else (a path, bidi
controls, upper case...) is 400 InvalidNodeName at POST /actions and POST /plans, with one
message per refused name, and no action or plan is created."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
import yaml

from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_api import P, post

ODD = ["../../etc/passwd", "\u202enode01", "node\u200e01", "\u2066node01\u2069", "Node01",
       "node_01", ".", "..", "%2e%2e", "-x", "a b", "n" * 254]


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = {"admin": "admin-token-0123", "reader": "reader-token-0123"}
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump({
        tokens["admin"]: {"user": "admin", "roles": ["admin"]},
        tokens["reader"]: {"user": "reader", "roles": ["reader"]}}))
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    return falcon.testing.TestClient(create_app(conf, harness.deps())), tokens


def _nothing_created(client: falcon.testing.TestClient, tokens: dict[str, str]) -> None:
    assert client.simulate_get(f"{P}/actions", headers={"X-Auth-Token": tokens["reader"]}
                               ).json == []


@pytest.mark.parametrize("name", ODD, ids=[ascii(n)[:20] for n in ODD])
def test_an_odd_target_node_is_refused(api: Any, harness: Harness, name: str) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    for action, value in [(a, v) for a in ("redeploy_server", "relabel_nodes", "deploy_site")
                          for v in ([name, "node01"], f"node01,{name}")]:
        resp = post(client, tokens["admin"], {"name": action,
                                              "parameters": {"target_nodes": value}})
        assert resp.status_code == 400, resp.text
        assert resp.json["reason"] == "InvalidNodeName"
        messages = resp.json["details"]["messageList"]
        assert len(messages) == 1 and messages[0]["kind"] == "ValidationMessage"
        assert ascii(name.strip())[:40] in messages[0]["message"]
    _nothing_created(client, tokens)


def test_every_refused_name_is_listed_once(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], {"name": "redeploy_server", "parameters": {
        "target_nodes": ["node01", "../../etc/passwd", "\u202enode02", "", 7]}})
    assert resp.status_code == 400 and resp.json["reason"] == "InvalidNodeName"
    messages = [m["message"] for m in resp.json["details"]["messageList"]]
    assert len(messages) == 3, messages
    assert "'../../etc/passwd'" in messages[0] and "\\u202e" in messages[1]
    assert "2 item(s) are empty or not strings" in messages[2]
    assert all("\u202e" not in m for m in messages)  # quoted escaped, never as is
    _nothing_created(client, tokens)


def test_plans_refuse_odd_names_too(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = client.simulate_post(f"{P}/plans", body=json.dumps({
        "name": "redeploy_server", "parameters": {"target_nodes": "../../etc/passwd"}}),
        headers={"X-Auth-Token": tokens["admin"], "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json["reason"] == "InvalidNodeName"


def test_valid_names_still_create_the_action(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], {"name": "redeploy_server",
                                          "parameters": {"target_nodes": " node01 "}})
    assert resp.status_code == 201, resp.text
