"""A redeploy end to end leaves audit chains that verify, on Shipyard and on Drydock, with
the operator's token user on the action and Shipyard's service user (on the operator's
behalf) on Drydock's tasks."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.e2e.conftest import create
from tests.fixtures.services import Berth

pytestmark = pytest.mark.slow


def drydock(berth: Berth, path: str, **params: Any) -> requests.Response:
    return requests.get(f"{berth.procs['drydock'].url}/api/v1.0{path}", params=params,
                        headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=60)


def test_a_redeploy_leaves_verifiable_audit_chains(berth: Berth,
                                                   successful_revision: int) -> None:
    since = time.time() - 1
    action = create(berth, "redeploy_server", target_nodes="node04")
    view = berth.wait_action(action["id"], timeout=300)
    assert view["state"] == "complete", view["message"]

    verified = berth.api("GET", "/audit/verify")
    assert verified.status_code == 200, verified.text
    assert verified.json()["details"]["chains"]["shipyard.actions"]["entries"] > 0
    entries = berth.api("GET", "/audit", params={"stream": "shipyard.actions",
                                                 "since": since, "limit": 1000}).json()
    mine = [e for e in entries["entries"] if e["object"] == f"action/{action['id']}"]
    assert [(e["old"], e["new"]) for e in mine] == [
        (None, "pending"), ("pending", "running"), ("running", "complete")]
    assert (mine[0]["user"], mine[0]["on_behalf_of"]) == ("admin", None)
    assert (mine[-1]["user"], mine[-1]["on_behalf_of"]) == ("system:shipyard", "admin")

    checked = drydock(berth, "/audit/verify")
    assert checked.status_code == 200, checked.text
    tasks = drydock(berth, "/audit", stream="drydock.tasks", since=since, limit=1000).json()
    created = [e for e in tasks["entries"] if e["change"] == "created"
               and (e.get("detail") or {}).get("action") == "destroy_nodes"]
    assert created and created[0]["user"] == "berth-service"
    assert created[0]["on_behalf_of"] == "admin"
    nodes = drydock(berth, "/audit", stream="drydock.nodes", since=since, limit=1000).json()
    assert any(e["object"] == "node/node04" and e["new"].get("torn_down") is True
               for e in nodes["entries"])
