"""POST /actions refuses target_nodes the design does not hold, at once (400 naming the first
50 and counting the rest): also before any site action has succeeded, when the target
revision does not exist yet and the committed design is what the names are checked against.
Nothing is created, so the engine never works through a thousand bogus nodes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_api import api, post  # noqa: F401 (the api fixture)

BOGUS = [f"bogus-{i:04d}" for i in range(999)]  # with node01: the 1,000 allowed


@pytest.mark.parametrize("tag", [None, "site-action-success"])
@pytest.mark.parametrize("name", ["redeploy_server", "relabel_nodes"])
def test_a_thousand_unknown_target_nodes_are_refused_at_post(
        api: Any, harness: Harness, tag: str | None, name: str) -> None:  # noqa: F811
    client, tokens = api
    rev = harness.commit(tag=tag)
    resp = post(client, tokens["admin"], {"name": name, "parameters": {
        "target_nodes": ["node01", *BOGUS]}})
    body = resp.json
    assert resp.status_code == 400 and body["reason"] == "ValidationFailure", resp.text
    assert body["message"].startswith("999 of the 1000 target_nodes are not nodes of")
    assert f"revision {rev}" in body["message"] and "bogus-0000" in body["message"]
    listed = [m["message"] for m in body["details"]["messageList"]]
    assert len(listed) == 51 and listed[-1].startswith("... and 949 more")
    assert not any("node01" in m for m in listed)
    assert harness.api.list() == [] and harness.engine().run_once() is False


def test_without_any_committed_design_the_action_still_fails_in_preflight(
        harness: Harness) -> None:
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert harness.drive(action["id"])["reason"] == "MissingPrecondition"
