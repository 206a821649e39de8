"""Decommission of node01 of the demo site through a real `promenade-api` gunicorn process."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.site import start_test_site, stop_site
from tests.support.procs import wait_until
from tests.support.services import ServiceProcess, write_tokens

pytestmark = pytest.mark.slow


@dataclass
class Deployed:
    site: Site
    promenade: ServiceProcess
    token: str
    design_href: str

    def post(self, path: str, **kw: Any) -> requests.Response:
        return requests.post(f"{self.promenade.url}/api/v1.0{path}", timeout=120,
                             headers={"X-Auth-Token": self.token}, **kw)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return requests.get(f"{self.promenade.url}/api/v1.0{path}", timeout=60,
                            headers={"X-Auth-Token": self.token}, **kw)

    def sim(self, path: str) -> Any:
        return requests.get(f"{self.site.urls['sitesim']}{path}", timeout=10).json()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """An own demo site (this module changes it) and Promenade under gunicorn against it."""
    work = tmp_path_factory.mktemp("promenade-e2e")
    site = start_test_site()
    try:
        tokens = write_tokens(work / "tokens.yaml")
        design = work / "design.yaml"
        design.write_text(site.design_yaml())
        promenade = ServiceProcess("promenade", work, {
            "auth": {"strategy": "token", "token_file": work / "tokens.yaml"},
            "logging": {"json": "false", "level": "INFO"},
            "kubernetes": {"kubeconfig": site.promenade_kubeconfig,
                           "lease_namespace": site.lease_namespace, "poll_interval": 0.05},
            "drain": {"eviction_retry_delay": 0.2, "lock_poll_interval": 0.1},
            "clear_labels": {"poll_interval": 0.1, "default_timeout": 30},
            "etcd": {"poll_interval": 0.2, "request_timeout": 5, "remove_timeout": 60},
            "kubelet": {"poll_interval": 0.1, "shutdown_timeout": 30},
        }, workers=2)
        try:
            yield Deployed(site, promenade, tokens["admin"], f"file://{design}")
        finally:
            promenade.stop()
    finally:
        stop_site(site)


def test_design_of_the_demo_site_is_valid(deployed: Deployed) -> None:
    result = deployed.post("/validatedesign", json={"href": deployed.design_href})
    assert result.status_code == 200, result.json()


def test_health_extended_sees_the_kubernetes_api_and_the_database(deployed: Deployed) -> None:
    body = deployed.get("/health/extended").json()
    names = [m["name"] for m in body["details"]["messageList"]]
    assert body["code"] == 200 and {"kubernetes", "database"} <= set(names), body


def test_decommission_of_node01_end_to_end(deployed: Deployed) -> None:
    before = deployed.sim("/nodes/node01")
    assert before["kubernetes"]["present"] and before["etcd"]
    ref = {"rel": "design", "href": deployed.design_href, "type": "application/x-yaml"}
    result = deployed.post("/nodes/node01/decommission", json=ref,
                           params={"drain-node-timeout": "60", "drain-node-grace-period": "5",
                                   "clear-labels-timeout": "30", "remove-etcd-timeout": "60",
                                   "etcd-ready-timeout": "60"})
    body = result.json()
    assert result.status_code == 200, body
    assert list(dict.fromkeys(m["step"] for m in body["details"]["messageList"])) == [
        "drain", "clear-labels", "agent-locks", "remove-etcd", "etcd-ready", "shutdown-kubelet"]
    assert result.headers["X-Context-Marker"]
    after = deployed.sim("/nodes/node01")
    assert after["etcd"] == []
    assert after["kubernetes"]["unschedulable"]
    # The step ends when the kubelet-shutdown pod has completed; as on a real site the Node
    # stays Ready until the node-lifecycle controller's grace period passes without heartbeats.
    wait_until(lambda: not deployed.sim("/nodes/node01")["kubernetes"]["ready"], timeout=90,
               interval=0.5, what="node01 to leave Ready")
    after = deployed.sim("/nodes/node01")
    labels = after["kubernetes"]["labels"]
    assert labels["promenade-decomission"] == "enabled"
    assert labels["maintenance.berth.io/required"] == "true"  # kept for lock holders
    assert labels["maintenance.yaook.cloud/maintenance-required-l2-agent"] == "True"
    assert {k for k in labels if "kubernetes.io/" not in k} == {
        "promenade-decomission", "maintenance.berth.io/required",
        "maintenance.yaook.cloud/maintenance-required-l2-agent"}, labels
    health = deployed.get("/etcd-cluster-health-statuses",
                          params={"design_ref": deployed.design_href}).json()
    assert [(m["name"], m["message"]) for m in health["details"]["messageList"]] == [
        ("kubernetes/node02", "Healthy"), ("kubernetes/node03", "Healthy")]
    removed = deployed.post("/nodes/node01/remove-from-cluster")
    assert removed.status_code == 200, removed.json()
    assert deployed.sim("/nodes/node01")["kubernetes"]["present"] is False
    assert deployed.post("/nodes/node01/drain").status_code == 404


def test_remove_from_cluster_of_a_working_node_is_409(deployed: Deployed) -> None:
    result = deployed.post("/nodes/node05/remove-from-cluster")
    assert result.status_code == 409 and result.json()["reason"] == "Conflict"
    assert deployed.sim("/nodes/node05")["kubernetes"]["present"] is True
