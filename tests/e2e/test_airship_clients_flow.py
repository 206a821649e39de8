"""An operator's Airship habits, end to end: every request to Berth here is shaped as Airship's
own clients send it, and the flow goes from committing the site's documents through a
redeploy_server (its steps, their logs and notes) to the redeployed node's boot action report
and build data in Drydock.

The shapes, from Airship's code:
- Shipyard: shipyard_client/api_client/shipyard_api_client.py (routes, query names, bodies)
  and base_client.py (X-Auth-Token, X-Context-Marker, Content-Type application/x-yaml unless
  told otherwise, `verbosity` on every request), with the YAML body as the CLI's
  cli/create/commands.py makes it (yaml.safe_dump_all of the files' documents).
- Drydock: drydock_client/client.py (endpoints 'v1.0/...', query strings as it writes them)
  and session.py (base URL .../api/, X-Context-Marker and X-End-User session headers, the
  token from its auth generator, JSON bodies, (20, 30) timeouts).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import yaml

from tests.fixtures.services import Berth

pytestmark = pytest.mark.slow
NODE = "node04"  # a Redfish compute node of rack02
VERIFY_TIMEOUT = 97  # the committed change


class ShipyardClient:
    """Airship's ShipyardClient over its BaseClient, as the requests go on the wire."""

    def __init__(self, url: str, token: str, verbosity: int = 1) -> None:
        self.endpoint = f"{url}/api/v1.0"
        self.token = token
        self.marker = str(uuid.uuid4())
        self.verbosity = verbosity

    def post_resp(self, path: str, query: dict[str, Any] | None = None, data: Any = None,
                  content_type: str = "application/x-yaml") -> requests.Response:
        headers = {"X-Context-Marker": self.marker, "content-type": content_type,
                   "X-Auth-Token": self.token}
        params = {**(query or {}), "verbosity": self.verbosity}
        return requests.post(f"{self.endpoint}/{path}", data=data or {}, params=params,
                             headers=headers, timeout=120)

    def get_resp(self, path: str, query: dict[str, Any] | None = None) -> requests.Response:
        headers = {"X-Context-Marker": self.marker, "X-Auth-Token": self.token}
        params = {**(query or {}), "verbosity": self.verbosity}
        return requests.get(f"{self.endpoint}/{path}", params=params, headers=headers,
                            timeout=120)

    def post_configdocs(self, collection: str, buffer_mode: str | None,
                        document_data: str) -> requests.Response:
        return self.post_resp(f"configdocs/{collection}", {"buffermode": buffer_mode},
                              document_data)

    def get_configdocs_status(self, versions: str | None = None) -> requests.Response:
        return self.get_resp("configdocs", {"versions": versions})

    def commit_configdocs(self, force: bool = False, dryrun: bool = False) -> requests.Response:
        return self.post_resp("commitconfigdocs", {"force": force, "dryrun": dryrun})

    def get_actions(self) -> requests.Response:
        return self.get_resp("actions")

    def post_actions(self, name: str, parameters: Any,
                     allow_intermediate_commits: bool = False) -> requests.Response:
        return self.post_resp("actions",
                              {"allow-intermediate-commits": allow_intermediate_commits},
                              json.dumps({"name": name, "parameters": parameters}),
                              content_type="application/json")

    def get_action_detail(self, action_id: str) -> requests.Response:
        return self.get_resp(f"actions/{action_id}")

    def get_step_detail(self, action_id: str, step_id: str) -> requests.Response:
        return self.get_resp(f"actions/{action_id}/steps/{step_id}")

    def get_step_log(self, action_id: str, step_id: str,
                     try_number: int | None = None) -> requests.Response:
        query = {"try": try_number} if try_number else {}
        return self.get_resp(f"actions/{action_id}/steps/{step_id}/logs", query)

    def get_note_details(self, note_id: str) -> requests.Response:
        return self.get_resp(f"notedetails/{note_id}")

    def get_workflows(self, since: str | None = None) -> requests.Response:
        return self.get_resp("workflows", {"since": since})

    def get_dag_detail(self, workflow_id: str) -> requests.Response:
        return self.get_resp(f"workflows/{workflow_id}")


class DrydockClient:
    """Airship's DrydockClient over a DrydockSession (as Shipyard's operators make one:
    marker and end user), as the requests go on the wire."""

    def __init__(self, url: str, token: str, marker: str, end_user: str) -> None:
        self.base_url = f"{url}/api/"
        self.session = requests.Session()
        self.session.headers.update([("X-Auth-Token", token)])  # auth_gen's header list
        self.session.headers.update({"X-Context-Marker": marker, "X-End-User": end_user})

    def get(self, endpoint: str) -> Any:
        resp = self.session.get(self.base_url + endpoint, params=None, timeout=(20, 30))
        assert resp.ok, f"{endpoint}: {resp.status_code} {resp.text}"
        return resp.json()

    def get_nodes(self) -> Any:
        return self.get("v1.0/nodes")

    def get_node_build_data(self, nodename: str, latest: bool = True) -> Any:
        return self.get(f"v1.0/nodes/{nodename}/builddata?latest={latest}")

    def get_task_build_data(self, task_id: str) -> Any:
        return self.get(f"v1.0/tasks/{task_id}/builddata")

    def get_task(self, task_id: str, builddata: bool | None = None,
                 subtaskerrors: bool | None = None, layers: int | None = None) -> Any:
        query = (["builddata=true"] if builddata else []) + (
            ["subtaskerrors=true"] if subtaskerrors else []) + (
            [f"layers={layers}"] if layers else [])
        return self.get(f"v1.0/tasks/{task_id}" + (f"?{'&'.join(query)}" if query else ""))


def ok(resp: requests.Response, code: int = 200) -> Any:
    assert resp.status_code == code, f"{resp.request.method} {resp.url}: {resp.status_code} " \
                                     f"{resp.text}"
    return resp.json()


def documents_as_the_cli_sends(design_yaml: str) -> str:
    """The site's design with one setting changed (so the commit has something to commit),
    loaded and dumped again as `shipyard create configdocs --filename` does."""
    docs = list(yaml.safe_load_all(design_yaml))
    for doc in docs:
        if doc and doc["schema"] == "shipyard/DeploymentConfiguration/v1":
            doc["data"]["physical_provisioner"]["verify_timeout"] = VERIFY_TIMEOUT
    return yaml.safe_dump_all(docs)


def until_ended(client: ShipyardClient, action_id: str, timeout: float = 300) -> Any:
    """As an Airship script polls: the action's detail until its lifecycle ends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = ok(client.get_action_detail(action_id))
        if view["action_lifecycle"] in ("Complete", "Failed"):
            return view
        time.sleep(0.2)
    raise TimeoutError(f"action {action_id} did not end")


@dataclass
class Flow:
    """What the flow did: the clients, the committed revision, the action and the site's
    view of the node before it."""

    shipyard: ShipyardClient
    drydock: DrydockClient
    revision: int
    action: dict[str, Any]
    before: dict[str, Any]


@pytest.fixture(scope="module")
def flow(berth: Berth, successful_revision: int) -> Flow:
    """shipyard create configdocs site --replace; shipyard commit configdocs; shipyard
    create action redeploy_server --param=target_nodes=node04 (until it ends)."""
    shipyard = ShipyardClient(berth.shipyard, berth.tokens["admin"])
    staged = ok(shipyard.post_configdocs("site", "replace",
                                         documents_as_the_cli_sends(berth.site.design_yaml())),
                201)
    assert staged["details"]["collection_status"] == "modified"
    committed = ok(shipyard.commit_configdocs())
    assert committed["details"]["committed"] is True
    assert committed["details"]["revision_id"] == staged["details"]["revision_id"]
    before = berth.sim(f"/nodes/{NODE}")
    created = ok(shipyard.post_actions("redeploy_server", {"target_nodes": [NODE]}), 201)
    assert created["action_lifecycle"] == "Pending"
    action = until_ended(shipyard, created["id"])
    drydock = DrydockClient(berth.procs["drydock"].url, berth.tokens["admin"],
                            shipyard.marker, "admin")
    return Flow(shipyard, drydock, int(committed["details"]["revision_id"]), action, before)


def steps_by_id(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in view["steps"]}


def drydock_task_of(log: str, action: str) -> str:
    """The Drydock task a step's log names ('Drydock <action> task <id> created')."""
    found = re.search(rf"Drydock {action} task (\S+) created", log)
    assert found, log
    return found.group(1)


def test_the_commit_is_the_committed_version_as_the_client_reads_it(flow: Flow) -> None:
    [site] = [c for c in ok(flow.shipyard.get_configdocs_status())
              if c["collection_name"] == "site"]
    assert (site["base_version"], site["base_revision"]) == ("committed", flow.revision)
    assert (site["new_status"], site["base_status"]) == ("unmodified", "present")
    resp = flow.shipyard.get_resp("configdocs/site", {"version": "committed"})
    assert resp.status_code == 200, resp.text
    config = next(d for d in yaml.safe_load_all(resp.text)
                  if d["schema"] == "shipyard/DeploymentConfiguration/v1")
    assert config["data"]["physical_provisioner"]["verify_timeout"] == VERIFY_TIMEOUT


def test_the_action_completes_with_airships_lifecycle_and_each_step_and_its_log(
        flow: Flow) -> None:
    view, client = flow.action, flow.shipyard
    assert (view["action_lifecycle"], view["state"]) == ("Complete", "complete"), view
    assert (view["dag_id"], view["dag_status"]) == ("redeploy_server", "success")
    assert view["context_marker"] == client.marker  # the client's X-Context-Marker
    assert view["parameters"]["target_nodes"] == [NODE]
    steps = steps_by_id(view)
    assert [s["index"] for s in view["steps"]] == list(range(1, len(steps) + 1))
    for n in ("destroy_nodes", "prepare_nodes", "deploy_nodes", "wait_boot_actions",
              "wait_node_ready", "relabel_nodes"):
        assert f"{n}.{NODE}" in steps
    for sid, summary in steps.items():
        step = ok(client.get_step_detail(view["id"], sid))
        assert (step["task_id"], step["state"]) == (sid, "success") and step["try_number"] >= 1
        assert summary["state"] == "success" and summary["url"].endswith(f"/steps/{sid}")
        assert step["dag_run_id"] == view["id"] and step["operator"]
        assert step["start_date"] <= step["end_date"] and step["duration"] >= 0
        log = client.get_step_log(view["id"], sid)
        assert log.status_code == 200 and log.headers["content-type"].startswith("text/plain")
        tried = step["try_number"]  # the log is the last try's, as Airship's default
        for note in (n for n in step["notes"] if n["try"] == tried):
            assert f"{sid} try {tried}: {note['note_val']}" in log.text
    boot = steps[f"wait_boot_actions.{NODE}"]
    boot_log = client.get_step_log(view["id"], boot["id"], try_number=boot["try_number"]).text
    assert f"{NODE} reported its boot actions: promjoin (" in boot_log and "success" in boot_log
    deploy_log = client.get_step_log(view["id"], f"deploy_nodes.{NODE}").text
    assert f"task {drydock_task_of(deploy_log, 'deploy_nodes')} succeeded" in deploy_log


def test_a_steps_note_details_hold_the_boot_action_report(flow: Flow) -> None:
    step = ok(flow.shipyard.get_step_detail(flow.action["id"], f"wait_boot_actions.{NODE}"))
    note = step["notes"][-1]
    assert note["sub_type"] == "step metadata" and note["verbosity"] == 1
    assert note["resolved_url_value"] == f"Details at notedetails/{note['note_id']}"
    details = ok(flow.shipyard.get_note_details(note["note_id"]))
    assert details["action_id"] == flow.action["id"]
    [report] = details["details"]["bootactions"]
    assert (report["action_name"], report["action_status"]) == ("promjoin", "success")
    assert details["details"]["bootaction_refusals"] == []
    quiet = ShipyardClient(flow.shipyard.endpoint[:-len("/api/v1.0")], flow.shipyard.token,
                           verbosity=0)  # shipyard --verbosity 0
    assert ok(quiet.get_step_detail(flow.action["id"], f"wait_boot_actions.{NODE}"))[
        "notes"] == []


def test_the_action_is_a_workflow_with_its_steps(flow: Flow) -> None:
    flows = ok(flow.shipyard.get_workflows())
    [run] = [w for w in flows if w["run_id"] == flow.action["id"]]
    assert (run["dag_id"], run["state"]) == ("redeploy_server", "success")
    one = ok(flow.shipyard.get_dag_detail(run["workflow_id"]))
    assert one["execution_date"] == flow.action["dag_execution_date"]
    states = {s["task_id"]: s["state"] for s in one["steps"]}
    assert states == {s["id"]: "success" for s in flow.action["steps"]}


def test_drydock_shows_the_boot_action_report_on_the_node_and_its_deploy_task(
        berth: Berth, flow: Flow) -> None:
    log = flow.shipyard.get_step_log(flow.action["id"], f"deploy_nodes.{NODE}").text
    deploy = drydock_task_of(log, "deploy_nodes")
    node = flow.drydock.get(f"v1.0/nodes/{NODE}")
    [report] = node["bootactions"]
    assert (report["action_name"], report["action_status"]) == ("promjoin", "success")
    assert report["task_id"] == deploy == node["last_task_id"]
    assert [d["message"] for d in report["details"]] == [
        f"{NODE} joined Kubernetes (/opt/promjoin.sh)"]
    task = flow.drydock.get_task(deploy, builddata=True, subtaskerrors=True)
    assert (task["kind"], task["action"], task["status"]) == ("Task", "deploy_nodes", "complete")
    assert task["result"]["status"] == "success" and task["result"]["successes"] == [NODE]
    assert task["subtask_errors"] == {}
    assert task["request_context"]["context_marker"] == flow.shipyard.marker
    reported = [m for m in task["result"]["details"]["messageList"]
                if m.get("context") == report["action_id"]]
    assert [m["message"] for m in reported] == [
        f"{NODE} joined Kubernetes (/opt/promjoin.sh)", f"Boot action promjoin on {NODE}: success"]
    assert [b["generator"] for b in task["build_data"]] == ["deploy_nodes:deploy"]
    assert flow.drydock.get_task_build_data(deploy) == task["build_data"]
    seen = berth.sim(f"/nodes/{NODE}")  # the node joined by its script, with its labels
    assert seen["kubernetes"]["ready"]
    assert seen["kubernetes"]["labels"].get("openstack-compute-node") == "enabled"
    assert berth.calls(system="host", op="bootaction_refused", node=NODE) == 0


def test_drydock_nodes_and_build_data_as_airships_client_reads_them(
        berth: Berth, flow: Flow) -> None:
    nodes = {n["hostname"]: n for n in flow.drydock.get_nodes()}
    spec = next(n for n in berth.site.spec.nodes if n.name == NODE)
    node = nodes[NODE]
    assert (node["status_name"], node["power_state"]) == ("Deployed", "on")
    assert (node["cpu_count"], node["memory"], node["boot_mac"]) == (8, 32768, spec.mac)
    data = flow.drydock.get_node_build_data(NODE)  # ?latest=True, as the client writes it
    by_generator = {b["generator"]: b for b in data}
    assert all(b["node_name"] == NODE for b in data)
    assert {"destroy_nodes:wipe_disks", "destroy_nodes:report_disks", "prepare_nodes:enlist",
            "deploy_nodes:deploy", "commission:00-maas-07-block-devices"} <= set(by_generator)
    wiped = json.loads(by_generator["destroy_nodes:report_disks"]["data_element"])
    assert {d["disk"]: d["result"] for d in wiped["disks"]} == {"sda": "wiped", "sdb": "wiped"}
    after = berth.sim(f"/nodes/{NODE}")  # and the site's disks were wiped indeed
    assert after["disks"]["sdb"]["marker"] != flow.before["disks"]["sdb"]["marker"]


def test_a_reader_is_refused_an_action_by_airships_create_action_rule(
        berth: Berth, flow: Flow) -> None:
    reader = ShipyardClient(berth.shipyard, berth.tokens["reader"])
    listed = ok(reader.get_actions())  # workflow_orchestrator:list_actions: readers may
    denied = reader.post_actions("redeploy_server", {"target_nodes": [NODE]})
    assert denied.status_code == 403, denied.text
    body = denied.json()
    assert (body["reason"], body["code"]) == ("Forbidden", 403)
    assert "create_action does not allow this request" in body["message"]
    assert [a["id"] for a in ok(reader.get_actions())] == [a["id"] for a in listed]
    assert reader.get_step_log(flow.action["id"], f"deploy_nodes.{NODE}").status_code == 200
