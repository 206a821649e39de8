"""Real kubectl against the simulated API: get, label, cordon, drain with PDBs, delete."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sitesim.hooks import NullHooks
from sitesim.kubeapi import KubeCluster, KubeTimings, seed_workloads, serve, write_kubeconfig
from sitesim.kubeapi.api import ListQuery
from sitesim.kubeapi.resources import BY_GROUP_PLURAL

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL),
                                reason="kubectl is not installed on this machine")
CONTROL = ["node01", "node02", "node03"]
COMPUTE = ["node04", "node05", "node06"]
PODS = BY_GROUP_PLURAL[("", "pods")]
NODES = BY_GROUP_PLURAL[("", "nodes")]
SMP = "application/strategic-merge-patch+json"


@dataclass
class Site:
    cluster: KubeCluster
    env: dict[str, str]

    def kubectl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def pods_on(self, node: str, prefix: str = "") -> list[dict]:
        items = self.cluster.api.list(PODS, None, ListQuery(
            field_selector=f"spec.nodeName={node}"))["items"]
        return [p for p in items if p["metadata"]["name"].startswith(prefix)
                and not p["metadata"].get("deletionTimestamp")]


def _wait(predicate, timeout: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    cluster = KubeCluster(NullHooks(), KubeTimings(
        pod_termination_delay=0.2, recreate_delay=1.0, kubelet_shutdown_delay=0.2,
        not_ready_delay=0.2, controller_interval=0.1))
    for name in CONTROL:
        cluster.add_node(name, {"kubernetes-etcd": "enabled"}, control_plane=True)
    for name in COMPUTE:
        cluster.add_node(name, {"openstack-compute-node": "enabled"})
    cluster.start()
    seed_workloads(cluster, CONTROL, COMPUTE)
    server = serve(cluster)
    config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    env = dict(os.environ, KUBECONFIG=str(config), KUBECACHEDIR=str(tmp_path / "cache"),
               HOME=str(tmp_path))
    try:
        s = Site(cluster, env)
        _wait(lambda: len(s.pods_on("node04", "web-")) == 1)
        yield s
    finally:
        server.shutdown()
        cluster.stop()


def test_get_nodes_shows_every_node_ready(site: Site) -> None:
    result = site.kubectl("get", "nodes")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert sorted(rows) == CONTROL + COMPUTE
    assert all(row[1] == "Ready" for row in rows.values())
    assert rows["node01"][2] == "control-plane"


def test_label_and_unlabel_a_node(site: Site) -> None:
    assert site.kubectl("label", "node", "node04", "promenade-decomission=enabled",
                        "--overwrite").returncode == 0
    assert site.cluster.node_summary("node04")["labels"]["promenade-decomission"] == "enabled"
    assert site.kubectl("label", "node", "node04", "promenade-decomission-").returncode == 0
    assert "promenade-decomission" not in site.cluster.node_summary("node04")["labels"]


def test_cordon_and_uncordon(site: Site) -> None:
    assert site.kubectl("cordon", "node05").returncode == 0
    assert site.cluster.node_summary("node05")["unschedulable"] is True
    assert "SchedulingDisabled" in site.kubectl("get", "node", "node05").stdout
    assert site.kubectl("uncordon", "node05").returncode == 0
    assert site.cluster.node_summary("node05")["unschedulable"] is False


def _two_web_pods_on_node04(site: Site) -> None:
    api = site.cluster.api
    for node in ("node05", "node06"):
        api.patch(NODES, None, node, {"spec": {"unschedulable": True}}, SMP)
    victim = site.pods_on("node05", "web-")[0]["metadata"]["name"]
    api.delete(PODS, "demo", victim)
    _wait(lambda: len(site.pods_on("node04", "web-")) == 2)
    for node in ("node05", "node06"):
        api.patch(NODES, None, node, {"spec": {"unschedulable": None}}, SMP)
    _wait(lambda: all(p["status"]["phase"] == "Running" for p in site.pods_on("node04")))


def test_drain_succeeds_after_pdb_retries(site: Site) -> None:
    _two_web_pods_on_node04(site)
    result = site.kubectl("drain", "node04", "--ignore-daemonsets", "--delete-emptydir-data",
                          "--force", "--grace-period", "1", "--timeout", "60s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "disruption budget" in result.stderr  # one eviction had to wait for the budget
    assert "node/node04 drained" in result.stdout
    assert site.cluster.node_summary("node04")["unschedulable"] is True
    remaining = site.pods_on("node04")
    assert {p["metadata"]["name"].rsplit("-", 1)[0] for p in remaining} == {"node-agent"}
    _wait(lambda: sum(len(site.pods_on(n, "web-")) for n in COMPUTE) == 3)


def test_drain_fails_at_its_timeout_when_the_budget_never_allows(site: Site) -> None:
    site.cluster.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": "debug", "namespace": "demo"},
                        "spec": {"minAvailable": 1, "selector": {"matchLabels": {
                            "application": "debug-shell"}}}})
    result = site.kubectl("drain", "node04", "--ignore-daemonsets", "--delete-emptydir-data",
                          "--force", "--grace-period", "1", "--timeout", "8s")
    assert result.returncode != 0
    assert "global timeout reached: 8s" in result.stderr
    assert [p["metadata"]["name"] for p in site.pods_on("node04", "debug-shell")] == [
        "debug-shell"]


def test_delete_node(site: Site) -> None:
    result = site.kubectl("delete", "node", "node06")
    assert result.returncode == 0, result.stderr
    assert site.cluster.node_summary("node06")["present"] is False
    assert "node06" not in site.kubectl("get", "nodes").stdout


def test_apply_creates_then_updates_a_pdb(site: Site, tmp_path: Path) -> None:
    manifest = tmp_path / "pdb.yaml"
    manifest.write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: cache, namespace: demo}\n"
        "spec:\n  minAvailable: 1\n  selector: {matchLabels: {application: scratch-cache}}\n")
    first = site.kubectl("apply", "-f", str(manifest))
    assert first.returncode == 0, first.stderr
    manifest.write_text(manifest.read_text().replace("minAvailable: 1", "maxUnavailable: 0"))
    second = site.kubectl("apply", "-f", str(manifest))
    assert second.returncode == 0, second.stderr
    rows = site.kubectl("get", "pdb", "-n", "demo", "cache", "--no-headers").stdout.split()
    assert rows[:4] == ["cache", "N/A", "0", "0"]


def test_run_schedules_a_pod_on_a_ready_node(site: Site) -> None:
    assert site.kubectl("cordon", "node04", "node05").returncode == 0
    assert site.kubectl("run", "tmp", "--image=busybox", "-n", "demo").returncode == 0
    _wait(lambda: [p["status"]["phase"] for p in site.pods_on("node06", "tmp")] == ["Running"])
