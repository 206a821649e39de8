"""Drydock under gunicorn on a simulated site, spoken to as Airship's drydock client sends
(python/drydock_provisioner/drydock_client/client.py and session.py: base URL .../api/,
endpoints 'v1.0/...', X-Auth-Token and X-Context-Marker headers, JSON bodies) and with
Berth's `drydock` CLI in the style of Airship's (cli/task, cli/node)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from click.testing import CliRunner, Result

from drydock_api.cli.main import cli
from sitesim.site import Site
from tests.fixtures.site import start_test_site, stop_site
from tests.integration.drydock.conftest import TIMINGS, drydock_sections
from tests.support.services import ServiceProcess, write_tokens

pytestmark = pytest.mark.slow
SITE = Path(__file__).with_name("airship_site.yaml")
NODES = ["as-rf-a", "as-ipmi-a", "as-rf-b"]


class AirshipClient:
    """The calls of Airship's DrydockClient over a DrydockSession, as they go on the wire."""

    def __init__(self, url: str, token: str) -> None:
        self.base = f"{url}/api/"
        self.session = requests.Session()
        self.session.headers.update({"X-Auth-Token": token,
                                     "X-Context-Marker": str(uuid.uuid4())})

    def _ok(self, resp: requests.Response) -> Any:
        assert resp.ok, f"{resp.status_code} {resp.text}"
        return resp.json()

    def get(self, endpoint: str) -> requests.Response:
        return self.session.get(self.base + endpoint, timeout=(20, 30))

    def create_task(self, design_ref: str, task_action: str,
                    node_filter: dict[str, Any] | None = None) -> Any:
        return self._ok(self.session.post(self.base + "v1.0/tasks", timeout=(20, 30), json={
            "action": task_action, "design_ref": design_ref, "node_filter": node_filter}))

    def get_task(self, task_id: str, builddata: bool = False) -> Any:
        query = "?builddata=true" if builddata else ""
        return self._ok(self.get(f"v1.0/tasks/{task_id}{query}"))

    def get_tasks(self) -> Any:
        return self._ok(self.get("v1.0/tasks"))

    def get_task_build_data(self, task_id: str) -> Any:
        return self._ok(self.get(f"v1.0/tasks/{task_id}/builddata"))

    def get_node_build_data(self, nodename: str, latest: bool = True) -> Any:
        return self._ok(self.get(f"v1.0/nodes/{nodename}/builddata?latest={latest}"))

    def get_nodes(self) -> Any:
        return self._ok(self.get("v1.0/nodes"))

    def get_nodes_for_filter(self, design_ref: str, node_filter: Any = None) -> Any:
        return self._ok(self.session.post(self.base + "v1.0/nodefilter", timeout=(20, 30),
                                          json={"node_filter": node_filter,
                                                "design_ref": design_ref}))

    def validate_design(self, href: str) -> requests.Response:
        return self.session.post(self.base + "v1.0/validatedesign", json={"href": href},
                                 timeout=(20, 30))

    def delete_tasks(self, days: int) -> requests.Response:
        return self.session.delete(self.base + f"v1.0/tasks?days={days}", timeout=(20, 30))


class Env:
    def __init__(self, site: Site, url: str, tokens: dict[str, str], href: str) -> None:
        self.site, self.url, self.tokens, self.href = site, url, tokens, href
        self.client = AirshipClient(url, tokens["admin"])

    def wait(self, task_id: str, timeout: float = 60) -> Any:
        """As Airship's `task create --block` does: until complete or terminated."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = self.client.get_task(task_id)
            if task["status"] in ("complete", "terminated"):
                return task
            time.sleep(0.1)
        raise TimeoutError(task_id)

    def drydock(self, *args: str, token: str = "admin") -> Result:
        return CliRunner().invoke(cli, list(args), env={
            "DRYDOCK_URL": self.url, "DRYDOCK_TOKEN": self.tokens[token],
            "DESIGN_REF": self.href})


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    site = start_test_site(SITE, overrides={"timings": dict(TIMINGS), "kubernetes": False})
    api = None
    try:
        work = tmp_path_factory.mktemp("drydock-airship")
        tokens = write_tokens(work / "tokens.yaml")
        (work / "design.yaml").write_text(site.design_yaml())
        api = ServiceProcess("drydock", work, drydock_sections(site, work))
        yield Env(site, api.url, tokens, f"file://{work}/design.yaml")
    finally:
        if api is not None:
            api.stop()
        stop_site(site)


def cli_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# --- Airship's client ---------------------------------------------------------------------
def test_airship_client_runs_a_task_and_reads_its_result_and_build_data(env: Env):
    c = env.client
    node_filter = {"filter_set_type": "intersection", "filter_set": [
        {"filter_type": "union", "node_names": ["as-rf-a", "as-ipmi-a"], "rack_names": []}]}
    task = c.create_task(env.href, "verify_nodes", node_filter)
    assert task["kind"] == "Task" and task["status"] in ("queued", "running")
    done = env.wait(task["task_id"])
    assert done["status"] == "complete" and done["result"]["status"] == "success"
    assert sorted(done["result"]["successes"]) == ["as-ipmi-a", "as-rf-a"]
    assert len(done["subtask_id_list"]) == 2
    assert task["task_id"] in [t["task_id"] for t in c.get_tasks()]
    with_bd = c.get_task(task["task_id"], builddata=True)
    generators = sorted({(b["node_name"], b["generator"]) for b in with_bd["build_data"]})
    assert generators == [(n, f"verify_nodes:{s}") for n in ("as-ipmi-a", "as-rf-a")
                          for s in ("verify_maas", "verify_oob")]
    assert c.get_task_build_data(task["task_id"]) == with_bd["build_data"]
    node_bd = c.get_node_build_data("as-rf-a")
    maas = next(b for b in node_bd if b["generator"] == "verify_nodes:verify_maas")
    assert json.loads(maas["data_element"]) == {"maas_status": "Deployed"}
    oob = next(b for b in node_bd if b["generator"] == "verify_nodes:verify_oob")
    assert json.loads(oob["data_element"]) == {"power_state": "on"}
    # what MAAS's commissioning scripts reported of the machine (the site started it
    # commissioned: no Drydock task did, so no task_id)
    disks = next(b for b in node_bd if b["generator"] == "commission:00-maas-07-block-devices")
    assert disks["task_id"] is None and disks["data_format"] == "text/plain"
    spec = next(n for n in env.site.spec.nodes if n.name == "as-rf-a")
    assert [d["NAME"] for d in json.loads(disks["data_element"])] == [d.name for d in spec.disks]
    nics = next(b for b in node_bd if b["generator"] == "commission:99-maas-03-network-interfaces")
    assert f"link/ether {spec.mac}" in nics["data_element"]
    untouched = c.get_node_build_data("as-rf-b")  # no task yet: MAAS's results only
    assert {b["generator"] for b in untouched} == {"commission:00-maas-07-block-devices",
                                                   "commission:99-maas-03-network-interfaces"}


def test_airship_client_node_list_reads_maas_hardware_and_boot_interface(env: Env):
    nodes = {n["hostname"]: n for n in env.client.get_nodes()}
    assert set(NODES) <= set(nodes)
    for name in NODES:
        node = nodes[name]
        # the simulated MAAS reports 8 CPUs and 32768 MiB for every machine
        assert (node["cpu_count"], node["memory"]) == (8, 32768)
        assert node["status_name"] == "Deployed" and node["power_state"] == "on"
        assert node["boot_mac"] == next(n.mac for n in env.site.spec.nodes if n.name == name)
        # no address is linked to the simulated boot interface: null, not a guess
        assert node["boot_ip"] is None
        assert node["power_address"]


def test_airship_client_nodefilter_and_validatedesign(env: Env):
    c = env.client
    assert c.get_nodes_for_filter(env.href) == NODES
    assert c.get_nodes_for_filter(env.href, {"filter_set_type": "union", "filter_set": [
        {"filter_type": "union", "rack_names": ["rack02"]}]}) == ["as-rf-b"]
    ok = c.validate_design(env.href)
    assert ok.status_code == 200 and ok.json()["status"] == "Success"
    assert ok.json()["code"] == 200
    bad = c.session.post(c.base + "v1.0/validatedesign", json={"rel": "design"}, timeout=30)
    assert bad.status_code == 400 and bad.json()["status"] == "Failure"


def test_airship_client_task_purge_keeps_recent_and_active_tasks(env: Env):
    c = env.client
    task = c.create_task(env.href, "verify_nodes", {"filter_set": [
        {"node_names": ["as-rf-b"]}]})
    env.wait(task["task_id"])
    assert c.delete_tasks(days=30).status_code == 200  # nothing is that old here
    assert c.get(f"v1.0/tasks/{task['task_id']}").status_code == 200
    purged = c.delete_tasks(days=0)
    assert purged.status_code == 200 and task["task_id"] in purged.json()["details"]["task_ids"]
    assert c.get(f"v1.0/tasks/{task['task_id']}").status_code == 404
    left = c.get_node_build_data("as-rf-b", latest=False)  # the steps' went with the task
    assert all(b["generator"].startswith("commission:") for b in left)


# --- the drydock CLI ----------------------------------------------------------------------
def test_cli_task_create_block_show_list_builddata(env: Env):
    created = cli_json(env.drydock("-o", "json", "task", "create", "-a", "verify_nodes",
                                   "-n", "as-rf-b", "--block", "--poll-interval", "0.1"))
    assert created["status"] == "complete" and created["result"]["status"] == "success"
    assert created["node_filter"] == {"filter_set_type": "intersection", "filter_set": [
        {"filter_type": "union", "node_names": ["as-rf-b"]}]}
    tid = created["task_id"]
    shown = cli_json(env.drydock("task", "show", "-t", tid, "-o", "json"))
    assert shown["task_id"] == tid and shown["result"]["successes"] == ["as-rf-b"]
    table = env.drydock("task", "show", tid)
    assert table.exit_code == 0 and tid in table.output and "success" in table.output
    listed = cli_json(env.drydock("task", "list", "-o", "json"))
    assert tid in [t["task_id"] for t in listed]
    bd = yaml.safe_load(env.drydock("task", "builddata", "-t", tid).output)
    assert {b["generator"] for b in bd} == {"verify_nodes:verify_oob",
                                            "verify_nodes:verify_maas"}
    tree = yaml.safe_load(env.drydock("task", "show", tid, "--layers", "-1").output)
    assert tree["init_task_id"] == tid and len(tree) == 1 + 1 + 1 + 2


def test_cli_task_create_failure_exits_1_with_block_and_bad_request_prints_the_problems(env):
    bad = env.drydock("task", "create", "-a", "no_such_action", "-n", "as-rf-a")
    assert bad.exit_code == 1 and "Error 400" in bad.output and "action must be one of" \
        in bad.output
    missing = env.drydock("task", "create", "-n", "as-rf-a")
    assert missing.exit_code == 2 and "--action" in missing.output
    denied = env.drydock("task", "create", "-a", "verify_nodes", "-n", "as-rf-a",
                         token="nobody")
    assert denied.exit_code == 1 and "Error 403" in denied.output


def test_cli_node_list_show_builddata(env: Env):
    env.drydock("task", "create", "-a", "verify_nodes", "-n", "as-ipmi-a", "--block",
                "--poll-interval", "0.1")
    table = env.drydock("node", "list")
    assert table.exit_code == 0, table.output
    assert "Node Name" in table.output and "PXE MAC" in table.output
    assert all(n in table.output for n in NODES) and "32768" in table.output
    listed = cli_json(env.drydock("node", "list", "-o", "json"))
    assert {n["hostname"] for n in listed} >= set(NODES)
    shown = yaml.safe_load(env.drydock("node", "show", "as-ipmi-a", "-o", "yaml").output)
    assert shown["hostname"] == "as-ipmi-a" and shown["oob_type"] == "ipmi"
    bd = cli_json(env.drydock("node", "builddata", "as-ipmi-a", "-o", "json"))
    assert {b["generator"] for b in bd} == {
        "verify_nodes:verify_oob", "verify_nodes:verify_maas",
        "commission:00-maas-07-block-devices", "commission:99-maas-03-network-interfaces"}
    assert all(b["node_name"] == "as-ipmi-a" for b in bd)
    as_yaml = env.drydock("node", "builddata", "as-ipmi-a")  # script output as literal blocks
    assert yaml.safe_load(as_yaml.output) == bd and "data_element: |" in as_yaml.output
    everything = cli_json(env.drydock("node", "builddata", "as-ipmi-a", "--no-latest",
                                      "-o", "json"))
    assert len(everything) >= len(bd)
    none = env.drydock("node", "builddata", "no-data-here")
    assert none.exit_code == 1 and "Error 404 NoBuildData" in none.output


def test_cli_node_retire_and_undo(env: Env):
    retired = cli_json(env.drydock("node", "retire", "as-rf-b", "--reason", "bad DIMM",
                                   "-o", "json"))
    assert retired["retired"] is True and retired["retired_reason"] == "bad DIMM"
    listed = cli_json(env.drydock("node", "list", "--retired", "-o", "json"))
    assert [n["hostname"] for n in listed] == ["as-rf-b"]
    back = cli_json(env.drydock("node", "retire", "as-rf-b", "--undo", "-o", "json"))
    assert back["retired"] is False and back["retired_reason"] is None
    bad = env.drydock("node", "retire", "No_Such")
    assert bad.exit_code != 0


def test_cli_task_delete(env: Env):
    created = cli_json(env.drydock("-o", "json", "task", "create", "-a", "verify_nodes",
                                   "-n", "as-rf-a", "--block", "--poll-interval", "0.1"))
    kept = env.drydock("task", "delete", "--days", "30")
    assert kept.exit_code == 0 and "0 task(s) purged" in kept.output
    gone = cli_json(env.drydock("task", "delete", "-d", "0", "-o", "json"))
    assert created["task_id"] in gone["details"]["task_ids"]
    assert env.drydock("task", "show", created["task_id"]).exit_code == 1
    assert env.drydock("task", "delete").exit_code == 2
