"""A redeployed node rejoins the way Airship's do: Drydock's deploy hands it its boot actions,
the node fetches them (its promjoin unit and Promenade's join script), registers itself with
its labels, starts its kubelet and reports to Drydock; redeploy_server waits for the report.
A broken script or a refused key leaves the node out, the cause in Drydock and Shipyard."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.conftest import create, steps_of
from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow
NODE = "node05"


def drydock(berth: Berth, path: str, **params: Any) -> Any:
    resp = requests.get(f"{berth.procs['drydock'].url}/api/v1.0{path}", params=params,
                        headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.json()


def promjoin(berth: Berth) -> dict[str, Any]:
    actions = drydock(berth, f"/nodes/{NODE}")["bootactions"]
    assert [a["action_name"] for a in actions] == ["promjoin"]
    return dict(actions[0])


def redeploy(berth: Berth) -> dict[str, Any]:
    action = create(berth, "redeploy_server", target_nodes=NODE)
    return berth.wait_action(action["id"], timeout=300)


def not_joined(berth: Berth) -> bool:
    return not berth.sim(f"/nodes/{NODE}")["kubernetes"]["present"]


def test_a_redeployed_node_rejoins_by_its_join_script_and_reports(
        berth: Berth, successful_revision: int) -> None:
    view = redeploy(berth)
    assert view["state"] == "complete", view["message"]
    step = steps_of(view)[f"wait_boot_actions.{NODE}"]
    assert step["state"] == "success"
    action = promjoin(berth)
    assert action["action_status"] == "success" and len(action["action_id"]) == 26
    assert any(f"{NODE} joined Kubernetes (/opt/promjoin.sh)" in d["message"]
               for d in action["details"])
    task = drydock(berth, f"/tasks/{action['task_id']}")
    assert task["action"] == "deploy_nodes"
    texts = [m["message"] for m in task["result"]["details"]["messageList"]]
    assert f"Boot action promjoin on {NODE}: success" in texts
    seen = berth.sim(f"/nodes/{NODE}")
    assert seen["kubernetes"]["ready"]
    assert seen["kubernetes"]["labels"].get("openstack-compute-node") == "enabled"
    assert berth.calls(system="host", op="bootaction_refused", node=NODE) == 0


def test_a_join_script_cut_short_leaves_the_node_out_and_fails_the_redeploy(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    faults(NODE, "host.join_script", "fail")
    view = redeploy(berth)
    assert view["state"] == "failed"
    step = steps_of(view)[f"wait_boot_actions.{NODE}"]
    assert step["state"] == "failed"
    detail = berth.api("GET", f"/actions/{view['id']}/steps/wait_boot_actions.{NODE}").json()
    assert f"of {NODE} reported failure" in str(detail) and "cut short" in str(detail)
    action = promjoin(berth)
    assert action["action_status"] == "failure"
    assert any("ends before join_done" in d["message"] and d["error"]
               for d in action["details"])
    assert not_joined(berth)
    faults.clear()
    assert redeploy(berth)["state"] == "complete"  # the site as it was for the next tests


def test_a_refused_key_leaves_the_node_out_with_the_refusal_in_drydock_and_shipyard(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    faults(NODE, "host.bootaction_key", "fail")
    action = create(berth, "redeploy_server", target_nodes=NODE)

    def waiting() -> dict[str, Any] | None:
        detail = berth.api("GET", f"/actions/{action['id']}/steps/"
                                  f"wait_boot_actions.{NODE}").json()
        return detail if "invalid X-Bootaction-Key" in str(detail) else None

    detail = wait_for(waiting, 300, "the step to show the refused key")
    assert "promjoin" in str(detail)
    view = drydock(berth, f"/nodes/{NODE}")
    assert view["bootactions"][0]["action_status"] == "incomplete"
    assert view["bootaction_refusals"][-1]["reason"] == "invalid X-Bootaction-Key"
    assert berth.calls(system="host", op="bootaction_refused", node=NODE) >= 1
    assert not_joined(berth)
    stop = berth.api("POST", f"/actions/{action['id']}/control/stop")
    assert stop.status_code < 300, stop.text
    berth.wait_action(action["id"])
    faults.clear()
    assert redeploy(berth)["state"] == "complete"  # the site as it was for the next tests
