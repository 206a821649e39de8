"""Promenade itself SIGKILLed mid-decommission, on the real control plane and a real 3-member
etcd cluster: the run survives in its database, the restarted Promenade takes the same run
over by itself (no request at hand) and completes it, the replayed request (two at once, on
two gunicorn workers) gets that run's answer, and the effects at the cluster happen once (a
pod evicted before the kill is not evicted again, the etcd member is removed once)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from sitesim.etcd.cluster import EtcdCluster, etcd_available
from tests.support.kube import Admin, wait_for
from tests.support.services import ServiceProcess

from .conftest import NS, Promenade
from .test_drain_real import apply, budget, deployment, ready_pods, settled_budget

pytestmark = pytest.mark.slow
NODES = ["pk-r1", "pk-r2", "pk-r3"]
QUERY = {"drain-node-timeout": "120", "drain-node-grace-period": "1",
         "remove-etcd-timeout": "60", "etcd-ready-timeout": "60"}


@pytest.fixture
def etcd_cluster(tmp_path: Path) -> Iterator[EtcdCluster]:
    if not etcd_available():
        pytest.skip("/usr/bin/etcd is not installed")
    cluster = EtcdCluster("kubernetes", NODES, tmp_path)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def durable(promenade: Promenade, tmp_path: Path) -> Iterator[ServiceProcess]:
    """A promenade-api of its own (two gunicorn workers, a 3 s run lease, looking for runs to
    resume every 0.5 s) to kill."""
    who = promenade.who
    work = tmp_path / "promenade"
    work.mkdir()
    proc = ServiceProcess("promenade", work, {
        "auth": {"strategy": "token", "token_file": who.token_file},
        "kubernetes": {"kubeconfig": who.kubeconfig, "lease_namespace": who.lease_namespace,
                       "request_timeout": 10, "poll_interval": 0.1},
        "drain": {"eviction_retry_delay": 0.5, "lock_poll_interval": 0.1},
        "clear_labels": {"poll_interval": 0.1},
        "etcd": {"poll_interval": 0.2, "join_poll_interval": 0.2},
        "kubelet": {"shutdown_timeout": 1, "poll_interval": 0.1},
        "decommission": {"run_lease": 3, "resume_interval": 0.5},
        "logging": {"json": "false", "level": "INFO"},
        "database": {"connection": f"sqlite:///{work / 'promenade.db'}"},
    }, workers=2)
    try:
        yield proc
    finally:
        proc.stop()


def design(path: Path, cluster: EtcdCluster) -> dict[str, str]:
    path.write_text(yaml.safe_dump({
        "schema": "promenade/EtcdClusters/v1",
        "metadata": {"schema": "metadata/Document/v1", "name": "etcd-clusters",
                     "layeringDefinition": {"abstract": False, "layer": "site"},
                     "storagePolicy": "cleartext"},
        "data": {"clusters": [{
            "name": cluster.name, "client_endpoints": cluster.client_endpoints,
            "members": [{"name": m, "node": m} for m in NODES],
            "thresholds": {"minimum_healthy_members": 2}}]}}))
    return {"rel": "design", "href": f"file://{path}", "type": "application/x-yaml"}


def run_of(proc: ServiceProcess, token: str) -> dict[str, Any] | None:
    reply = requests.get(f"{proc.url}/api/v1.0/nodes/pk-r1/decommission", timeout=10,
                         headers={"X-Auth-Token": token})
    if reply.status_code == 404:
        return None
    assert reply.status_code == 200, reply.text
    run: dict[str, Any] = reply.json()
    return run


def test_a_killed_promenade_resumes_the_same_decommission_and_repeats_no_effect(
        admin: Admin, promenade: Promenade, durable: ServiceProcess,
        etcd_cluster: EtcdCluster, tmp_path: Path) -> None:
    for name in NODES:
        admin.ready_node(name, pool=name)
    apply(admin, deployment("rheld", 1, "pk-r1"))
    apply(admin, deployment("rfree", 1, "pk-r1"))
    apply(admin, budget("rheld", 1))
    [held] = wait_for("the held pod Ready", lambda: ready_pods(admin, "rheld"))
    [free] = wait_for("the free pod Ready", lambda: ready_pods(admin, "rfree"))
    assert settled_budget(admin, "rheld", 1)["disruptionsAllowed"] == 0
    ref = design(durable.workdir / "design.yaml", etcd_cluster)  # under its file_root
    headers = {"X-Auth-Token": promenade.token, "Idempotency-Key": "decommission-pk-r1"}

    def post() -> requests.Response:
        return requests.post(f"{durable.url}/api/v1.0/nodes/pk-r1/decommission", json=ref,
                             params=QUERY, headers=headers, timeout=180)

    lost: list[BaseException] = []

    def first() -> None:
        try:
            post()
        except requests.RequestException as exc:  # the connection dies with Promenade
            lost.append(exc)

    caller = threading.Thread(target=first)
    caller.start()
    # The drain evicted the free pod and waits for the budget: kill Promenade there.
    seen: list[Any] = []

    def drain_held() -> dict[str, Any] | None:
        run = run_of(durable, promenade.token)
        seen[:] = [run, [p["metadata"]["name"] for p in admin.pods_on("pk-r1")]]
        if run and run["phase"] == "drain" and not admin.pods_on("pk-r1", "rfree-"):
            return run
        return None

    try:
        before: dict[str, Any] = wait_for("the drain held by the budget", drain_held, 60)
    except AssertionError:
        raise AssertionError(f"{seen}\n{durable.proc.output()[-3000:]}") from None
    durable.proc.kill()
    caller.join(30)
    assert lost, "the first request must lose its connection"
    assert [p["metadata"]["uid"] for p in admin.pods_on("pk-r1", "rheld-")] == [
        held["metadata"]["uid"]]
    assert sorted(etcd_cluster.member_names()) == NODES

    admin.call("DELETE", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/rheld")
    durable.start()
    # Nobody asks again: the restarted Promenade resumes the run once its lease lapsed.
    done = wait_for("the run resumed and completed", lambda: (
        run := run_of(durable, promenade.token)) and run["state"] != "running" and run, 120)
    assert done["id"] == before["id"] and done["state"] == "succeeded", done

    answers: list[requests.Response] = []
    replays = [threading.Thread(target=lambda: answers.append(post())) for _ in range(2)]
    for t in replays:
        t.start()
    for t in replays:
        t.join(180)
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert answers[0].json() == answers[1].json() == done["result"]
    body = answers[0].json()
    assert body["details"]["run"] == before["id"]

    run = run_of(durable, promenade.token)
    assert run is not None and run["id"] == before["id"] and run["state"] == "succeeded"
    assert run["takeovers"] == 1
    attempts = {p["name"]: p["attempts"] for p in run["phases"]}
    assert attempts["drain"] == 2 and attempts["remove-etcd"] == 1, run["phases"]
    # Effects once: the free pod was evicted by the first attempt only, the member once.
    [report] = [m["report"] for m in body["details"]["messageList"]
                if m.get("step") == "drain" and "report" in m]
    assert report["evicted"] == [f"{NS}/{held['metadata']['name']}"], report
    assert f"{NS}/{free['metadata']['name']}" not in report["evicted"]
    assert sorted(etcd_cluster.member_names()) == ["pk-r2", "pk-r3"]
    assert not admin.pods_on("pk-r1", "rheld-")
