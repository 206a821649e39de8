"""Hostile input on Shipyard's actions: the acting user comes from the token, target_nodes
is bounded at creation, Idempotency-Key honoured, unsafe values refused."""

from __future__ import annotations

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

SERVICE = "service-token-0123"


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = {"admin": "admin-token-0123", "reader": "reader-token-0123", "service": SERVICE}
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump({
        tokens["admin"]: {"user": "admin", "roles": ["admin"]},
        tokens["reader"]: {"user": "reader", "roles": ["reader"]},
        SERVICE: {"user": "berth-service", "roles": ["admin", "service"]}}))
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"},
                                            "workflow": {"max_target_nodes": 50}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    return falcon.testing.TestClient(create_app(conf, harness.deps())), tokens


REDEPLOY = {"name": "redeploy_server", "parameters": {"target_nodes": "node01"}}


def test_x_end_user_of_an_admin_does_not_change_whose_action_it_is(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    body = post(client, tokens["admin"], REDEPLOY, headers={"X-End-User": "somebody"}).json
    assert body["user"] == "admin"
    assert body["command_audit"][0]["user"] == "admin"


def test_a_service_acting_for_an_operator_is_recorded_on_behalf(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    body = post(client, SERVICE, REDEPLOY, headers={"X-End-User": "alice"}).json
    assert body["user"] == "berth-service (on behalf of alice)"


def test_too_many_target_nodes_are_refused_before_planning(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    names = [f"node{i:05d}" for i in range(5_000)]  # under the generic list limit
    resp = post(client, tokens["admin"], {"name": "redeploy_server",
                                          "parameters": {"target_nodes": names}})
    assert resp.status_code == 400 and "max_target_nodes" in str(resp.json["details"])
    as_text = post(client, tokens["admin"], {"name": "redeploy_server",
                                             "parameters": {"target_nodes": ",".join(names)}})
    assert as_text.status_code == 400
    long_name = post(client, tokens["admin"], {"name": "relabel_nodes",
                                               "parameters": {"target_nodes": ["n" * 300]}})
    assert long_name.status_code == 400
    assert client.simulate_get(f"{P}/actions", headers={"X-Auth-Token": tokens["reader"]}
                               ).json == []


def test_unknown_target_nodes_are_refused_at_creation(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], {"name": "redeploy_server",
                                          "parameters": {"target_nodes": ["ghost01"]}})
    assert resp.status_code == 400 and "ghost01" in str(resp.json["details"])


def test_create_action_honours_idempotency_keys(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    key = {"Idempotency-Key": "create-1"}
    one = post(client, tokens["admin"], REDEPLOY, headers=key)
    two = post(client, tokens["admin"], REDEPLOY, headers=key)
    assert one.status_code == two.status_code == 201 and one.json["id"] == two.json["id"]
    listed = client.simulate_get(f"{P}/actions", headers={"X-Auth-Token": tokens["reader"]})
    assert len(listed.json) == 1
    other = post(client, tokens["admin"], {"name": "relabel_nodes"}, headers=key)
    assert other.status_code == 422


def test_a_lone_surrogate_in_parameters_is_refused(api: Any, harness: Harness) -> None:
    client, tokens = api
    resp = post(client, tokens["admin"],
                '{"name": "relabel_nodes", "parameters": {"target_nodes": ["\\udc00"]}}')
    assert resp.status_code == 400 and resp.json["reason"] == "UnsafeInput"
    listed = client.simulate_get(f"{P}/actions", headers={"X-Auth-Token": tokens["reader"]})
    assert listed.status_code == 200
