"""update_site end to end: the intermediate-commit refusal, its override, and the tags."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow


def _changed_design(berth: Berth, n: int) -> str:
    docs: list[dict[str, Any]] = list(yaml.safe_load_all(berth.site.design_yaml()))
    for doc in docs:
        if doc["schema"] == "shipyard/DeploymentConfiguration/v1":
            doc["data"]["physical_provisioner"]["verify_timeout"] = 60 + n
    return yaml.safe_dump_all(docs, sort_keys=False)


def test_intermediate_commits_are_refused_then_allowed(berth: Berth) -> None:
    tags = {"site-action-success", "site-action-failure"}
    first = berth.commit_design(_changed_design(berth, 1))
    second = berth.commit_design(_changed_design(berth, 2))
    assert second > first > berth.revision
    refused = berth.cli("create", "action", "update_site")
    assert refused.exit_code == 1 and "IntermediateCommits" in refused.output
    assert not [a for a in berth.api("GET", "/actions").json() if a["name"] == "update_site"]
    allowed = berth.cli("-o", "json", "create", "action", "update_site",
                        "--allow-intermediate-commits")
    assert allowed.exit_code == 0, allowed.output
    action = json.loads(allowed.output)
    assert action["revision_id"] == second
    assert "skipped" in action["validations"][0]["message"]
    view = berth.wait_action(action["id"], timeout=300)
    check = next(s for s in view["steps"] if s["id"] == "intermediate_commit_check")
    assert check["state"] == "success" and "skipped" in check["notes"][-1]["message"]
    written = [t for t in berth.api("GET", f"/revisions/{second}/tags").json()
               if t["tag"] in tags]
    assert [t["data"] for t in written] == [{"dag_id": action["id"]}]
    expected = "site-action-success" if view["state"] == "complete" else "site-action-failure"
    assert written[0]["tag"] == expected


def site_statuses(berth: Berth) -> dict[str, Any] | None:
    """The CLI's site statuses, or None while a BMC's power state is `unknown` (a BMC that did
    not answer within the request timeout, as happens on a loaded machine)."""
    result = berth.cli("-o", "json", "get", "site-statuses")
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.output)
    known = all(p["power_state"] != "unknown" for p in body["machines-power-state"])
    return body if known else None


def test_site_statuses_show_every_node_of_the_site(berth: Berth) -> None:
    body = wait_for(lambda: site_statuses(berth), 60, "every BMC to answer its power state")
    names = {n["name"] for n in berth.sim("/nodes")}
    assert {n["hostname"] for n in body["nodes-provision-status"]} == names
    powers = {p["hostname"]: p["power_state"] for p in body["machines-power-state"]}
    for name in names:
        assert powers[name] == berth.sim(f"/nodes/{name}")["power"]
