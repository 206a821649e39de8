"""GET /actions answers the current list: its encoded body is reused only while unchanged."""

from __future__ import annotations

import json

from common.context import RequestContext
from tests.unit.shipyard.conftest import Harness


def _listed(h: Harness) -> list[dict[str, object]]:
    data: list[dict[str, object]] = json.loads(h.api.list_json())
    assert data == h.api.list()
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
    assert harness.api.list_json() is harness.api.list_json()
