"""GET /actions answers the current list: its encoded body is reused only while unchanged."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import falcon.testing
import pytest

from common.context import RequestContext
from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

Api = tuple[falcon.testing.TestClient, dict[str, str]]


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> Api:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps())
    return falcon.testing.TestClient(app), tokens


def _listed(h: Harness) -> list[dict[str, object]]:
    raw, packed = h.api.list_json()
    data: list[dict[str, object]] = json.loads(raw)
    assert data == h.api.list() and gzip.decompress(packed) == raw
    return data


def test_list_body_follows_creates_controls_and_engine_transitions(harness: Harness) -> None:
    assert _listed(harness) == []
    harness.commit(tag="site-action-success")
    first = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert [a["state"] for a in _listed(harness)] == ["pending"]
    harness.api.control(first["id"], "pause", RequestContext(user="admin"))
    assert [a["state"] for a in _listed(harness)] == ["paused"]
    harness.api.control(first["id"], "unpause", RequestContext(user="admin"))
    harness.drive(first["id"])
    listed = _listed(harness)
    assert [a["state"] for a in listed] == ["complete"] and listed[0]["ended"] is not None
    second = harness.create("redeploy_server", {"target_nodes": "node02"})
    assert [a["id"] for a in _listed(harness)] == [first["id"], second["id"]]


def test_unchanged_list_reuses_the_encoded_body(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.create("redeploy_server", {"target_nodes": "node01"})
    assert harness.api.list_json()[0] is harness.api.list_json()[0]


def test_list_is_gzipped_only_for_clients_that_accept_it(api: Api, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    harness.create("redeploy_server", {"target_nodes": "node01"})
    plain = client.simulate_get("/api/v1.0/actions", headers={"X-Auth-Token": tokens["reader"]})
    packed = client.simulate_get("/api/v1.0/actions", headers={
        "X-Auth-Token": tokens["reader"], "Accept-Encoding": "gzip, deflate"})
    assert plain.status_code == packed.status_code == 200
    assert "content-encoding" not in plain.headers and plain.json[0]["state"] == "pending"
    assert packed.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(packed.content)) == plain.json
    assert packed.headers["vary"] == "Accept-Encoding"
