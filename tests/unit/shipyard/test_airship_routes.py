"""Routes and shapes Airship's shipyard client reads: step logs, validations, notes and their
details, workflows, step and action fields, allow-intermediate-commits, Airship's rule names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

P = "/api/v1.0"
ULID_CHARS = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def client_for(harness: Harness, tmp_path: Path, policy: dict[str, str] | None = None,
               ) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf: dict[str, Any] = {"auth": {"token_file": tmp_path / "tokens.yaml"}}
    if policy is not None:
        (tmp_path / "policy.yaml").write_text(json.dumps(policy))
        conf["oslo_policy"] = {"policy_file": tmp_path / "policy.yaml"}
    write_conf(tmp_path / "shipyard.conf", conf)
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps())
    return falcon.testing.TestClient(app), tokens


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    return client_for(harness, tmp_path)


def get(client: Any, token: str, path: str, **params: Any) -> Any:
    return client.simulate_get(f"{P}{path}", headers={"X-Auth-Token": token},
                               params=params or None)


def create(client: Any, token: str, body: dict[str, Any], query: str = "") -> Any:
    return client.simulate_post(f"{P}/actions", body=json.dumps(body), query_string=query,
                                headers={"X-Auth-Token": token,
                                         "Content-Type": "application/json"})


def retried_redeploy(harness: Harness) -> str:
    """A redeploy whose decommission step fails once (try 1) and then succeeds (try 2)."""
    harness.commit(tag="site-action-success")
    failures = [RuntimeError("promenade went away")]

    def flaky(node: str) -> None:
        if failures:
            raise failures.pop()

    harness.promenade.on_decommission = flaky
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    return str(action["id"])


def test_step_logs_show_the_last_try_a_chosen_try_and_a_tail(api: Any,
                                                             harness: Harness) -> None:
    client, tokens = api
    action_id = retried_redeploy(harness)
    path = f"/actions/{action_id}/steps/decommission.node01/logs"
    last = get(client, tokens["reader"], path)
    assert last.status_code == 200 and last.headers["content-type"].startswith("text/plain")
    assert last.text and all(" try 2: " in line for line in last.text.splitlines())
    first = get(client, tokens["reader"], path, **{"try": "1"})
    assert "promenade went away" in first.text
    assert all(" try 1: " in line for line in first.text.splitlines())
    tail = get(client, tokens["reader"], path, **{"try": "1", "tail": "1"})
    assert tail.text.splitlines() == first.text.splitlines()[-1:]
    step = get(client, tokens["reader"], f"/actions/{action_id}/steps/decommission.node01")
    assert step.json["try_number"] == 2


@pytest.mark.parametrize("params", [{"try": "0"}, {"try": "x"}, {"tail": "-3"},
                                    {"tail": "many"}])
def test_step_logs_refuse_bad_try_or_tail_with_400(api: Any, harness: Harness,
                                                   params: dict[str, str]) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    resp = get(client, tokens["reader"], f"/actions/{action['id']}/steps/preflight/logs",
               **params)
    assert resp.status_code == 400 and resp.json["reason"] == "InvalidParameter"


def test_step_logs_of_unknown_action_step_or_try_are_404(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    base = f"/actions/{action['id']}/steps"
    assert get(client, tokens["reader"], f"/actions/{'0' * 26}/steps/preflight/logs"
               ).status_code == 404
    missing = get(client, tokens["reader"], f"{base}/nosuchstep/logs")
    assert missing.status_code == 404 and missing.json["reason"] == "StepNotFound"
    beyond = get(client, tokens["reader"], f"{base}/preflight/logs", **{"try": "7"})
    assert beyond.status_code == 404 and beyond.json["reason"] == "StepTryNotFound"


def test_steps_carry_airflow_fields_and_berth_state(api: Any, harness: Harness) -> None:
    client, tokens = api
    action_id = retried_redeploy(harness)
    view = get(client, tokens["reader"], f"/actions/{action_id}").json
    step = get(client, tokens["reader"], f"/actions/{action_id}/steps/preflight").json
    assert step["task_id"] == "preflight" and step["dag_id"] == "redeploy_server"
    assert step["state"] == step["step_state"] == "success" and step["try_number"] == 1
    assert step["operator"] and step["index"] == 1 and step["duration"] >= 0
    assert step["start_date"].endswith("+00:00") and step["end_date"] >= step["start_date"]
    assert step["execution_date"] == view["dag_execution_date"]
    assert view["dag_id"] == "redeploy_server" and view["dag_status"] == "success"


def test_pending_and_waiting_steps_have_airflow_states(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    listed = get(client, tokens["reader"], "/actions").json[0]
    assert listed["action_lifecycle"] == "Pending" and listed["state"] == "pending"
    first = listed["steps"][0]
    assert first == {"id": "preflight", "url": f"/actions/{action['id']}/steps/preflight",
                     "index": 1, "state": None, "step_state": "pending", "notes": []}
    assert listed["dag_execution_date"] and listed["step_counts"]["pending"] >= 1


@pytest.mark.parametrize(("state", "lifecycle"), [
    ("pending", "Pending"), ("running", "Processing"), ("paused", "Paused"),
    ("stopping", "Processing"), ("complete", "Complete"), ("failed", "Failed"),
    ("stopped", "Failed")])
def test_action_lifecycle_uses_airship_names(state: str, lifecycle: str) -> None:
    from shipyard_api.actions.views import lifecycle as name_of
    assert name_of(state) == lifecycle


def test_action_list_shows_each_actions_steps_as_they_change(api: Any,
                                                             harness: Harness) -> None:
    client, tokens = api
    action_id = retried_redeploy(harness)
    listed = get(client, tokens["reader"], "/actions").json[0]
    assert listed["action_lifecycle"] == "Complete"
    assert {s["state"] for s in listed["steps"]} == {"success"}
    assert [s["index"] for s in listed["steps"]] == list(range(1, len(listed["steps"]) + 1))
    assert listed["notes"][0]["note_val"].startswith("Configdoc revision")
    assert listed["notes"][0]["assoc_id"] == f"action/{action_id}"
    quiet = get(client, tokens["reader"], "/actions", verbosity="0").json[0]
    assert quiet["notes"] == []


def test_notes_are_airship_note_objects_with_details_at_notedetails(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    action_id = retried_redeploy(harness)
    step = get(client, tokens["reader"], f"/actions/{action_id}/steps/destroy_nodes.node01"
               ).json
    note = step["notes"][-1]
    assert note["assoc_id"] == f"step/{action_id}/destroy_nodes.node01"
    assert note["subject"] == "destroy_nodes.node01" and note["sub_type"] == "step metadata"
    assert note["verbosity"] == 1 and note["note_val"] == note["message"]
    assert len(note["note_id"]) == 26 and set(note["note_id"]) <= ULID_CHARS
    assert note["resolved_url_value"] == f"Details at notedetails/{note['note_id']}"
    again = get(client, tokens["reader"], f"/actions/{action_id}/steps/destroy_nodes.node01")
    assert again.json["notes"][-1]["note_id"] == note["note_id"]  # stable
    details = get(client, tokens["reader"], f"/notedetails/{note['note_id']}")
    assert details.status_code == 200
    assert json.loads(details.text)["details"] == step["details"]
    action_note = get(client, tokens["reader"], f"/actions/{action_id}").json["notes"][0]
    none = get(client, tokens["reader"], f"/notedetails/{action_note['note_id']}")
    assert none.status_code == 404 and none.json["reason"] == "NoNoteDetails"
    assert get(client, tokens["reader"], "/notedetails/short").status_code == 400
    unknown = get(client, tokens["reader"], f"/notedetails/{'0' * 26}")
    assert unknown.status_code == 404 and unknown.json["reason"] == "NoteNotFound"
    assert get(client, tokens["reader"], f"/actions/{action_id}/steps/destroy_nodes.node01",
               verbosity="0").json["notes"] == []
    assert get(client, tokens["reader"], f"/actions/{action_id}",
               verbosity="9").status_code == 400


def test_validations_have_ids_and_are_readable_one_by_one(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit()
    harness.commit()
    action = harness.create("update_site", {"allow-intermediate-commits": True})
    view = get(client, tokens["reader"], f"/actions/{action['id']}").json
    listed = view["validations"][0]
    assert listed["action_id"] == action["id"] and listed["validation_name"]
    assert "skipped" in listed["message"]
    one = get(client, tokens["reader"], f"/actions/{action['id']}/validations/{listed['id']}")
    assert one.status_code == 200 and one.json == listed
    missing = get(client, tokens["reader"], f"/actions/{action['id']}/validations/{'0' * 26}")
    assert missing.status_code == 404 and missing.json["reason"] == "ValidationNotFound"


def test_workflows_list_action_runs_since_a_date_and_show_one(api: Any,
                                                              harness: Harness) -> None:
    client, tokens = api
    action_id = retried_redeploy(harness)
    listed = get(client, tokens["reader"], "/workflows").json
    assert [w["run_id"] for w in listed] == [action_id]
    entry = listed[0]
    assert entry["dag_id"] == "redeploy_server" and entry["state"] == "success"
    assert entry["workflow_id"].startswith("redeploy_server__1970-01-12T")
    assert get(client, tokens["reader"], "/workflows", since="2030-01-01").json == []
    assert len(get(client, tokens["reader"], "/workflows",
                   since="1970-01-01T00:00:00Z").json) == 1
    bad = get(client, tokens["reader"], "/workflows", since="last tuesday")
    assert bad.status_code == 400
    one = get(client, tokens["reader"], f"/workflows/{entry['workflow_id']}").json
    assert one["sub_dags"] == [] and one["steps"][0]["task_id"] == "preflight"
    assert get(client, tokens["reader"], "/workflows/nounderscores").status_code == 400
    gone = get(client, tokens["reader"], "/workflows/redeploy_server__2001-01-01T00:00:00.000000")
    assert gone.status_code == 404


def test_allow_intermediate_commits_query_parameter_as_airship_sends_it(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit()
    harness.commit()
    refused = create(client, tokens["admin"], {"name": "update_site", "parameters": None},
                     "allow-intermediate-commits=False")
    assert refused.status_code == 409 and refused.json["reason"] == "IntermediateCommits"
    bad = create(client, tokens["admin"], {"name": "update_site"},
                 "allow-intermediate-commits=maybe")
    assert bad.status_code == 400
    allowed = create(client, tokens["admin"], {"name": "update_site", "parameters": {}},
                     "allow-intermediate-commits=True")
    assert allowed.status_code == 201, allowed.text
    assert allowed.json["parameters"]["allow-intermediate-commits"] is True


def test_redeploy_ignores_allow_intermediate_commits_as_airship_does(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    created = create(client, tokens["admin"], {"name": "redeploy_server", "parameters": {
        "target_nodes": ["node01"]}}, "allow-intermediate-commits=False")
    assert created.status_code == 201, created.text
    assert "allow-intermediate-commits" not in created.json["parameters"]


@pytest.mark.parametrize("name", ["test_site", "update_software"])
def test_armada_actions_are_refused_naming_what_berth_lacks(api: Any, harness: Harness,
                                                            name: str) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = create(client, tokens["admin"], {"name": name, "parameters": {}})
    assert resp.status_code == 400 and resp.json["reason"] == "ActionNotIncluded"
    assert "Armada" in resp.json["message"]
    assert get(client, tokens["reader"], "/actions").json == []


def test_an_airship_policy_file_is_honoured_and_berth_names_still_work(
        harness: Harness, tmp_path: Path) -> None:
    client, tokens = client_for(harness, tmp_path, {
        "workflow_orchestrator:list_actions": "rule:admin_required",
        "workflow_orchestrator:get_workflow": "rule:deny_all",
        "shipyard:list_workflows": "role:admin"})
    assert get(client, tokens["reader"], "/actions").status_code == 403
    assert get(client, tokens["admin"], "/actions").status_code == 200
    denied = get(client, tokens["admin"], "/workflows/redeploy_server__2001-01-01T00:00:00.0")
    assert denied.status_code == 403
    assert get(client, tokens["reader"], "/workflows").status_code == 403
    assert get(client, tokens["admin"], "/workflows").status_code == 200
    assert get(client, tokens["reader"], "/site_statuses").status_code == 200


def test_configdocs_status_has_base_status_and_append_is_refused_for_a_buffered_collection(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    h = {"X-Auth-Token": tokens["admin"], "Content-Type": "application/x-yaml"}
    doc = ("---\nschema: deckhand/Passphrase/v1\nmetadata:\n  schema: metadata/Document/v1\n"
           "  name: {name}\n  storagePolicy: cleartext\n  layeringDefinition:\n"
           "    abstract: false\n    layer: site\ndata: secret\n...\n")
    first = client.simulate_post(f"{P}/configdocs/one", body=doc.format(name="a"), headers=h)
    assert first.status_code == 201, first.text
    again = client.simulate_post(f"{P}/configdocs/one", body=doc.format(name="b"), headers=h,
                                 params={"buffermode": "append"})
    assert again.status_code == 409 and again.json["reason"] == "CollectionInBuffer"
    other = client.simulate_post(f"{P}/configdocs/two", body=doc.format(name="c"), headers=h,
                                 params={"buffermode": "append"})
    assert other.status_code == 201, other.text
    status = get(client, tokens["reader"], "/configdocs").json
    assert {(c["collection_name"], c["new_status"], c["base_status"]) for c in status} == {
        ("one", "created", "not present"), ("two", "created", "not present")}
