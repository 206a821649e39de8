"""Hostile input on Drydock: design references only from allowed places, unsafe values never
stored (so GET /tasks keeps answering), Idempotency-Key reuse with another body refused."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post, task_request

P = "/api/v1.0"


def replica(site: Site, tmp_path: Any) -> falcon.testing.TestClient:
    """One API process's app on the site's database (each has its own replay cache)."""
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app)


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2", "n3"])
    return replica(site, tmp_path), site


@pytest.mark.parametrize("href", ["file:///dev/zero", "file:///etc/passwd",
                                  "http://169.254.169.254/latest/meta-data/",
                                  "deckhand+http://127.0.0.1:22/api/v1.0/revisions/1/x"])
def test_reader_endpoints_refuse_design_refs_outside_the_allowed_places(api, href):
    client, _ = api
    nodes = client.simulate_get(f"{P}/nodes", params={"design_ref": href}, headers=ADMIN)
    assert nodes.status_code == 400 and nodes.json["reason"] == "DesignRefNotAllowed"
    selected = post(client, f"{P}/nodefilter", {"design_ref": href, "node_filter": None})
    assert selected.status_code == 400 and selected.json["reason"] == "DesignRefNotAllowed"
    task = post(client, f"{P}/tasks", {"action": "destroy_nodes", "design_ref": href,
                                       "node_filter": None})
    assert task.status_code == 400


def test_a_lone_surrogate_is_refused_and_get_tasks_keeps_answering(api):
    client, site = api
    body = json.dumps(task_request(site, node_filter={
        "filter_set_type": "union", "filter_set": [{"node_names": ["n1-SURROGATE"]}]}))
    raw = body.replace("-SURROGATE", "\\ud800")  # JSON text with a lone surrogate escape
    resp = client.simulate_post(f"{P}/tasks", body=raw,
                                headers={**ADMIN, "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json["reason"] == "UnsafeInput"
    listed = client.simulate_get(f"{P}/tasks", headers=ADMIN)
    assert listed.status_code == 200 and listed.json == []


def test_deep_json_is_400(api):
    client, _ = api
    resp = client.simulate_post(f"{P}/tasks", body="[" * 100_000 + "]" * 100_000,
                                headers={**ADMIN, "Content-Type": "application/json"})
    assert resp.status_code == 400


def test_a_key_reused_for_another_task_is_422_even_on_another_replica(
        make_site: SiteFactory, tmp_path: Any) -> None:
    site = make_site(["n1", "n2", "n3"])
    replicas = [replica(site, tmp_path), replica(site, tmp_path)]
    key = {"Idempotency-Key": "task-1"}
    first = post(replicas[0], f"{P}/tasks", task_request(site), key)
    same = post(replicas[1], f"{P}/tasks", task_request(site), key)
    assert first.status_code == 201 and same.json["task_id"] == first.json["task_id"]
    other = task_request(site, node_filter={"filter_set_type": "union",
                                            "filter_set": [{"node_names": ["n2"]}]})
    refused = post(replicas[1], f"{P}/tasks", other, key)
    assert refused.status_code == 422 and refused.json["reason"] == "IdempotencyKeyReused"


def test_a_site_task_with_a_refused_design_ref_is_refused_at_creation(api):
    client, _ = api
    resp = post(client, f"{P}/tasks", {"action": "validate_design",
                                       "design_ref": "http://169.254.169.254/x"})
    assert resp.status_code == 400 and resp.json["reason"] == "DesignRefNotAllowed"
    assert client.simulate_get(f"{P}/tasks", headers=ADMIN).json == []
