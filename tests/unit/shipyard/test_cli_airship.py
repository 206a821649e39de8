"""The `shipyard` commands Airship's CLI has for logs, workflows, validations and notes."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_airship_routes import retried_redeploy
from tests.unit.shipyard.test_cli import run, served

__all__ = ["served"]


def test_logs_print_a_steps_lines_of_a_try(served: Any, harness: Harness) -> None:
    action_id = retried_redeploy(harness)
    first = run(served, "logs", f"step/{action_id}/decommission.node01", "--try", "1",
                token="reader")
    assert first.exit_code == 0, first.output
    assert "promenade went away" in first.output and " try 1: " in first.output
    tail = run(served, "logs", f"step/{action_id}/decommission.node01", "--tail", "1")
    assert tail.exit_code == 0 and len(tail.output.splitlines()) == 1
    missing = run(served, "logs", f"step/{action_id}/nosuchstep")
    assert missing.exit_code == 1 and "StepNotFound" in missing.output


def test_workflows_validations_and_note_details(served: Any, harness: Harness) -> None:
    action_id = retried_redeploy(harness)
    listed = json.loads(run(served, "-o", "json", "get", "workflows").output)
    assert [w["action_id"] for w in listed] == [action_id]
    table = run(served, "get", "workflows", "--since", "1970-01-01")
    assert listed[0]["workflow_id"] in table.output
    one = json.loads(run(served, "-o", "json", "describe",
                         f"workflow/{listed[0]['workflow_id']}").output)
    assert one["steps"][0]["task_id"] == "preflight"
    step = json.loads(run(served, "-o", "json", "describe",
                          f"step/{action_id}/destroy_nodes.node01").output)
    note_id = step["notes"][-1]["note_id"]
    details = json.loads(run(served, "-o", "json", "describe", f"notedetails/{note_id}").output)
    assert details["details"] == step["details"]
    harness.commit()
    harness.commit()
    site = harness.create("update_site", {"allow-intermediate-commits": True})
    vid = harness.api.get(site["id"])["validations"][0]["id"]
    shown = run(served, "describe", f"validation/{site['id']}/{vid}")
    assert shown.exit_code == 0 and vid in shown.output
