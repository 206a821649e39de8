"""deploy_site on the simulated site of spec 001's example strategy, with the three example
processings of the spec reproduced through injected simulator faults.

Each test gets a fresh site (etc/sites/strategy-example.yaml: ntp01, three control, four
compute and three monitoring nodes over rack01-rack03), its machines enlisted as New in MAAS
so that prepare_nodes commissions them, and fresh Shipyard, Promenade and Drydock processes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.e2e.conftest import drydock_can
from tests.fixtures.services import Berth, ShipyardWorker, service_sections
from tests.fixtures.site import ROOT, start_test_site, stop_site
from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_conf, write_tokens

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not drydock_can("prepare_nodes", "deploy_nodes"),
                       reason="Drydock does not implement prepare_nodes/deploy_nodes yet"),
]
SITE = "etc/sites/strategy-example.yaml"
GROUPS = ("ntp-node", "control-nodes", "monitoring-nodes", "compute-nodes-1",
          "compute-nodes-2")


@pytest.fixture
def site_berth(tmp_path: Path) -> Iterator[Berth]:
    raw = yaml.safe_load((ROOT / SITE).read_text())
    site = start_test_site(SITE, overrides={"defaults": {**raw["defaults"], "state": "new"}})
    procs: dict[str, ServiceProcess] = {}
    worker = ShipyardWorker(tmp_path / "shipyard.conf", tmp_path)
    try:
        tokens = write_tokens(tmp_path / "tokens.yaml")
        ports = {name: free_port() for name in ("shipyard", "promenade", "drydock")}
        sections = service_sections(site, tmp_path, tokens["admin"], ports)
        for name in ("promenade", "drydock", "shipyard"):
            procs[name] = ServiceProcess(name, tmp_path, sections[name], port=ports[name])
        write_conf(tmp_path / "shipyard.conf", sections["shipyard"])
        worker.start()
        env = Berth(site, tmp_path, tokens, procs, worker)
        env.revision = env.commit_design(site.design_yaml())
        yield env
    finally:
        worker.stop()
        for proc in reversed(list(procs.values())):
            proc.stop()
        stop_site(site)


def fault(berth: Berth, node: str, operation: str) -> None:
    resp = requests.post(f"{berth.site.urls['sitesim']}/faults",
                         json={"node": node, "operation": operation, "effect": "fail"},
                         timeout=10)
    assert resp.status_code < 300, resp.text


def deploy_site(berth: Berth, name: str = "deploy_site",
                **params: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    resp = berth.api("POST", "/actions", json={"name": name, "parameters": params})
    assert resp.status_code == 201, resp.text
    view = berth.wait_action(resp.json()["id"], timeout=300)
    step = berth.api("GET", f"/actions/{view['id']}/steps/baremetal").json()
    return view, step


def groups(step: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["name"]: g for g in step["details"]["groups"]}


def maas(berth: Berth, node: str) -> str | None:
    status: str | None = berth.sim(f"/nodes/{node}")["maas_status"]
    return status


def site_tags(berth: Berth, revision: int) -> list[dict[str, Any]]:
    return [t for t in berth.api("GET", f"/revisions/{revision}/tags").json()
            if t["tag"].startswith("site-action")]


def test_every_group_succeeds_and_the_site_is_deployed(site_berth: Berth) -> None:
    b = site_berth
    view, step = deploy_site(b)
    assert view["state"] == "complete", b.logs()
    assert {g["status"] for g in groups(step).values()} == {"succeeded"}
    assert set(step["details"]["nodes"].values()) == {"success"}
    for node in b.sim("/nodes"):
        assert node["maas_status"] == "Deployed", node
    assert [t["data"] for t in site_tags(b, b.revision)] == [{"dag_id": view["id"]}]
    assert site_tags(b, b.revision)[0]["tag"] == "site-action-success"
    described = b.cli("-o", "json", "describe", f"action/{view['id']}")
    assert described.exit_code == 0 and '"compute-nodes-2"' in described.output


def test_ntp_prepare_failure_fails_dependents_deploys_monitoring_and_fails(
        site_berth: Berth) -> None:
    b = site_berth
    fault(b, "ntp01", "maas.commission")
    view, step = deploy_site(b)
    assert view["state"] == "failed"
    assert step["reason"] == "CriticalGroupFailed"
    found = groups(step)
    assert found["ntp-node"]["status"] == "failed"
    assert found["control-nodes"]["reason"] == "dependency ntp-node failed"
    for name in ("compute-nodes-1", "compute-nodes-2"):
        assert found[name] == {**found[name], "status": "failed",
                               "reason": "dependency control-nodes failed"}
    assert found["monitoring-nodes"]["status"] == "succeeded"
    for node in ("monitoring01", "monitoring02", "monitoring03"):
        assert maas(b, node) == "Deployed"
    for node in ("control01", "compute01", "compute04"):
        assert maas(b, node) == "New"  # never touched
        assert step["details"]["nodes"][node] == "not started"
    assert b.calls(system="maas", op="deploy", node="ntp01") == 0
    assert site_tags(b, b.revision)[0]["tag"] == "site-action-failure"


def test_compute_nodes_2_deploy_failure_completes_with_that_group_failed(
        site_berth: Berth) -> None:
    b = site_berth
    fault(b, "compute03", "maas.deploy")
    fault(b, "compute04", "maas.deploy")
    view, step = deploy_site(b)
    assert view["state"] == "complete", b.logs()
    found = groups(step)
    assert found["compute-nodes-2"]["status"] == "failed"
    assert "50% required" in found["compute-nodes-2"]["reason"]
    assert {n: g["status"] for n, g in found.items() if n != "compute-nodes-2"} == {
        n: "succeeded" for n in GROUPS if n != "compute-nodes-2"}
    assert maas(b, "compute03") == "Failed deployment"
    assert maas(b, "compute01") == "Deployed"
    assert site_tags(b, b.revision)[0]["tag"] == "site-action-success"


def test_update_site_after_two_commits_needs_allow_intermediate_commits(
        site_berth: Berth) -> None:
    b = site_berth
    docs: list[dict[str, Any]] = list(yaml.safe_load_all(b.site.design_yaml()))
    revisions = []
    for n in (1, 2):
        for doc in docs:
            if doc["schema"] == "shipyard/DeploymentConfiguration/v1":
                doc["data"]["physical_provisioner"]["verify_timeout"] = 60 + n
        revisions.append(b.commit_design(yaml.safe_dump_all(docs, sort_keys=False)))
    # As Airship's shipyard client sends it: the query parameter always, False by default.
    resp = b.api("POST", "/actions", params={"allow-intermediate-commits": False},
                 json={"name": "update_site", "parameters": {}})
    assert resp.status_code == 409 and resp.json()["reason"] == "IntermediateCommits"
    view, step = deploy_site(b, "update_site", **{"allow-intermediate-commits": "true"})
    assert view["state"] == "complete", b.logs()
    assert {g["status"] for g in groups(step).values()} == {"succeeded"}
    assert [t["data"] for t in site_tags(b, revisions[1])] == [{"dag_id": view["id"]}]
    assert site_tags(b, revisions[0]) == []
