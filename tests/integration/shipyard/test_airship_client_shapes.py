"""Shipyard under gunicorn answering requests shaped as Airship's shipyard client sends them:
POST /actions with ?allow-intermediate-commits, the action list's steps, a step's Airflow
fields, its logs, notes and their details, workflows, and an Airship policy file."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.support.services import ServiceProcess, write_tokens
from tests.unit.shipyard.design import design

POLICY = {  # as an Airship site writes it: its rule names and base rules
    "workflow_orchestrator:get_action_step_logs": "rule:admin_required",
    "workflow_orchestrator:action_deploy_site": "rule:admin_required",
    "workflow_orchestrator:get_site_statuses": "rule:deny_all",
}


@pytest.fixture(params=["sqlite", "postgresql"])
def shipyard(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = (f"sqlite:///{tmp_path}/shipyard.db" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    tokens = write_tokens(tmp_path / "tokens.yaml")
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(POLICY))
    proc = ServiceProcess("shipyard", tmp_path, {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "oslo_policy": {"policy_file": tmp_path / "policy.yaml"},
        "database": {"connection": url},
        "logging": {"json": "false"},
        "peers": {"promenade_url": "http://127.0.0.1:9", "drydock_url": "http://127.0.0.1:9",
                  "retries": 0},
        "documents": {"secret_key_file": tmp_path / "docs.key"},
        "workflow": {"api_workers": 1, "poll_interval": 0.05, "lease_seconds": 3},
    }, workers=2)
    try:
        yield proc.url + "/api/v1.0", tokens
    finally:
        proc.stop()


def headers(token: str, **extra: str) -> dict[str, str]:
    """The headers Airship's client sends with every call."""
    return {"X-Auth-Token": token, "X-Context-Marker": str(uuid.uuid4()), **extra}


def post_action(api: str, token: str, name: str, parameters: Any = None,
                allow: bool = False) -> requests.Response:
    """As ShipyardClient.post_actions: the query parameter always, a JSON body."""
    return requests.post(f"{api}/actions", params={"allow-intermediate-commits": allow},
                         data=json.dumps({"name": name, "parameters": parameters}),
                         headers=headers(token, **{"Content-Type": "application/json"}),
                         timeout=60)


def ended(api: str, token: str, action_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        view: dict[str, Any] = requests.get(f"{api}/actions/{action_id}",
                                            headers=headers(token), timeout=30).json()
        if view["action_lifecycle"] in ("Complete", "Failed"):
            return view
        time.sleep(0.1)
    raise AssertionError(f"action {action_id} did not end")


def stage_and_commit(api: str, token: str, version: int) -> None:
    docs = design()
    docs[0].setdefault("data", {})["marker"] = version  # a new revision each time
    staged = requests.post(f"{api}/configdocs/site", data=yaml.safe_dump_all(docs),
                           params={"buffermode": "replace"}, timeout=60,
                           headers=headers(token, **{"Content-Type": "application/x-yaml"}))
    assert staged.status_code == 201, staged.text
    done = requests.post(f"{api}/commitconfigdocs", params={"force": True, "dryrun": False},
                         headers=headers(token), timeout=120)
    assert done.status_code == 200, done.text


def test_airship_client_requests_get_airship_shapes(shipyard: Any) -> None:
    api, tokens = shipyard
    admin, reader = tokens["admin"], tokens["reader"]
    created = post_action(api, admin, "redeploy_server", {"target_nodes": ["node01"]})
    assert created.status_code == 201, created.text
    action_id = created.json()["id"]
    view = ended(api, reader, action_id)  # nothing committed: preflight fails
    assert view["action_lifecycle"] == "Failed" and view["state"] == "failed"
    assert view["dag_id"] == "redeploy_server" and view["dag_status"] == "failed"
    assert view["notes"][0]["assoc_id"] == f"action/{action_id}"

    listed = requests.get(f"{api}/actions", headers=headers(reader), timeout=30).json()
    entry = next(a for a in listed if a["id"] == action_id)
    assert entry["steps"][0] == {"id": "preflight", "index": 1, "state": "failed",
                                 "step_state": "failed", "notes": [],
                                 "url": f"/actions/{action_id}/steps/preflight"}
    assert entry["dag_execution_date"] == view["dag_execution_date"]

    step = requests.get(f"{api}/actions/{action_id}/steps/preflight", headers=headers(reader),
                        timeout=30).json()
    assert (step["task_id"], step["state"], step["try_number"]) == ("preflight", "failed", 1)
    assert step["duration"] is not None and step["operator"]
    note = step["notes"][-1]
    assert note["sub_type"] == "step metadata" and len(note["note_id"]) == 26

    log_url = f"{api}/actions/{action_id}/steps/preflight/logs"
    logs = requests.get(log_url, headers=headers(admin), timeout=30)
    assert logs.status_code == 200 and "MissingPrecondition" in logs.text
    assert requests.get(log_url, params={"try": 1, "tail": 1}, headers=headers(admin),
                        timeout=30).text == logs.text.splitlines(keepends=True)[-1]
    assert requests.get(log_url, params={"try": "two"}, headers=headers(admin),
                        timeout=30).status_code == 400
    assert requests.get(log_url, headers=headers(reader), timeout=30).status_code == 403

    details = requests.get(f"{api}/notedetails/{note['note_id']}", headers=headers(reader),
                           timeout=30)
    assert details.status_code == 200 and json.loads(details.text)["step_id"] == "preflight"

    since = view["dag_execution_date"][:10]
    flows = requests.get(f"{api}/workflows", params={"since": since}, headers=headers(reader),
                         timeout=30).json()
    flow = next(w for w in flows if w["run_id"] == action_id)
    one = requests.get(f"{api}/workflows/{flow['workflow_id']}", headers=headers(reader),
                       timeout=30).json()
    assert one["state"] == "failed" and one["steps"][0]["task_id"] == "preflight"

    assert requests.get(f"{api}/site_statuses", headers=headers(admin),
                        timeout=30).status_code == 403
    refused = post_action(api, admin, "test_site", {})
    assert refused.status_code == 400 and refused.json()["reason"] == "ActionNotIncluded"


def test_update_site_after_two_commits_needs_the_query_parameter(shipyard: Any) -> None:
    api, tokens = shipyard
    stage_and_commit(api, tokens["admin"], 1)
    stage_and_commit(api, tokens["admin"], 2)
    status = requests.get(f"{api}/configdocs", params={"versions": "committed,buffer"},
                          headers=headers(tokens["reader"]), timeout=30).json()
    assert status[0]["base_status"] == "present"
    refused = post_action(api, tokens["admin"], "update_site")
    assert refused.status_code == 409 and refused.json()["reason"] == "IntermediateCommits"
    allowed = post_action(api, tokens["admin"], "update_site", allow=True)
    assert allowed.status_code == 201, allowed.text
    assert allowed.json()["parameters"]["allow-intermediate-commits"] is True
    denied = post_action(api, tokens["reader"], "deploy_site", allow=True)
    assert denied.status_code == 403
