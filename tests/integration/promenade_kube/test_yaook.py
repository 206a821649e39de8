"""Yaook's lock protocol (spec 002) on the real control plane: the site's operator
(sitesim.kube.yaook) locks a node while each dependent agent runs and keeps the L2 agent while
any lock is left; Promenade, as its ServiceAccount, decommissions such a node in that order,
never evicting an agent, and fails naming a lock that is never released instead of waiting
for ever; a dead compute node's fenced decommission completes once the pod garbage collector
has removed its agents and the operator has released their locks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from sitesim.kube.controlplane import ControlPlane
from sitesim.kube.yaook import L2, LOCK_PREFIX, MAINTENANCE_LABEL, YaookOperator
from tests.support.kube import Admin, wait_for

from .conftest import NS, Promenade, promenade_process

pytestmark = pytest.mark.slow
HYPERVISOR = "compute.yaook.cloud/hypervisor"
AGENTS = ("nova-compute", "neutron-l3-agent")
YNS = "yaook"


@pytest.fixture(scope="module")
def operator(kube_plane: ControlPlane, admin: Admin) -> Iterator[YaookOperator]:
    op = YaookOperator(kube_plane.server, kube_plane.pki.ca_cert,
                       cert=(str(kube_plane.pki.admin_cert), str(kube_plane.pki.admin_key)),
                       selector=f"{HYPERVISOR}=true", agents=AGENTS, namespace=YNS,
                       poll_interval=0.1, grace_period=1)
    op.start()
    try:
        yield op
    finally:
        op.stop()


@pytest.fixture(scope="module")
def yaook_promenade(promenade: Promenade,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[Promenade]:
    """Promenade as the same ServiceAccount, with short kubelet polls."""
    yield from promenade_process(promenade.who, tmp_path_factory.mktemp("promenade-yaook"),
                                 kubelet={"poll_interval": 0.2, "shutdown_timeout": 30})


def patch_node(admin: Admin, node: str, meta: dict[str, Any]) -> None:
    admin.call("PATCH", f"/api/v1/nodes/{node}", {"metadata": meta},
               content_type="application/merge-patch+json").raise_for_status()


def agent_pods(admin: Admin, node: str) -> dict[str, dict[str, Any]]:
    """The operator's pods on the node by agent name (Terminating ones included)."""
    items = admin.get(f"/api/v1/namespaces/{YNS}/pods?labelSelector="
                      f"sitesim.berth.io%2Fyaook-node%3D{node}")["items"]
    return {p["metadata"]["labels"]["sitesim.berth.io/yaook-agent"]: p for p in items}


def locks(admin: Admin, node: str) -> list[str]:
    notes = admin.node(node)["metadata"].get("annotations") or {}
    return sorted(k for k in notes if k.startswith(LOCK_PREFIX))


def running(pod: dict[str, Any] | None) -> bool:
    return bool(pod and not pod["metadata"].get("deletionTimestamp")
                and pod.get("status", {}).get("phase") == "Running")


def serving(admin: Admin, node: str) -> bool:
    """Every agent runs on the node, each dependent under its lock, the label says False."""
    pods = agent_pods(admin, node)
    label = admin.node(node)["metadata"]["labels"].get(MAINTENANCE_LABEL)
    return (all(running(pods.get(a)) for a in (L2, *AGENTS)) and label == "False"
            and locks(admin, node) == sorted(LOCK_PREFIX + a for a in AGENTS))


@dataclass
class Observer:
    """Polls the node and its agent pods (node, pods, node again) every 50 ms, independently
    of the operator: the spec's invariants are checked on every snapshot."""

    admin: Admin
    node: str
    snapshots: list[tuple[float, list[str], dict[str, bool], list[str]]] = field(
        default_factory=list)  # time, locks before, agent -> deleting, locks after
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Observer:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            before = locks(self.admin, self.node)
            pods = {a: bool(p["metadata"].get("deletionTimestamp"))
                    for a, p in agent_pods(self.admin, self.node).items()}
            self.snapshots.append((time.time(), before, pods, locks(self.admin, self.node)))
            self._stop.wait(0.05)

    def first(self, agent: str, what: str) -> float:
        """When the agent's pod was first seen Terminating ('deleting') or gone ('gone')."""
        for at, _, pods, _ in self.snapshots:
            if (what == "gone" and agent not in pods) or (what == "deleting" and pods.get(
                    agent, True)):
                return at
        raise AssertionError(f"{agent} never {what}")

    def released(self, agent: str, by: str = "start") -> float:
        """When the agent's lock was first seen gone, at the start of a snapshot (before its
        pods were read) or by its end (after): a release between the two reads belongs to
        both that snapshot's end and the next one's start."""
        for at, before, _, after in self.snapshots:
            if LOCK_PREFIX + agent not in (before if by == "start" else after):
                return at
        raise AssertionError(f"the lock of {agent} was never released")

    def check_protocol(self) -> None:
        for at, before, pods, after in self.snapshots:
            for agent in AGENTS:  # a lock is released only once its agent is gone
                assert agent not in pods or LOCK_PREFIX + agent in before, (at, before, pods)
            if pods.get(L2, True):  # the L2 agent goes only once no lock is left
                assert after == [], (at, pods, after)


def test_the_operator_locks_while_each_agent_runs_and_keeps_l2_while_a_lock_is_left(
        admin: Admin, operator: YaookOperator) -> None:
    admin.ready_node("yk-p1", **{HYPERVISOR: "true"})
    wait_for("the agents on yk-p1 under their locks", lambda: serving(admin, "yk-p1"), 30)
    events = [(e.what, e.agent) for e in operator.history() if e.node == "yk-p1"]
    for agent in AGENTS:  # the lock before the agent, the agent only after the label
        assert events.index(("lock-set", agent)) < events.index(("agent-created", agent))
        assert events.index(("label", L2)) < events.index(("lock-set", agent))
    assert events.index(("agent-created", L2)) < events.index(("label", L2))

    hold = LOCK_PREFIX + "test-hold"  # an agent whose operator releases it late
    patch_node(admin, "yk-p1", {"annotations": {hold: ""}})
    with Observer(admin, "yk-p1") as seen:
        patch_node(admin, "yk-p1", {"labels": {HYPERVISOR: None}})  # no longer a compute node
        wait_for("the dependents gone and their locks released", lambda: locks(
            admin, "yk-p1") == [hold] and set(agent_pods(admin, "yk-p1")) == {L2}, 30)
        assert admin.node("yk-p1")["metadata"]["labels"][MAINTENANCE_LABEL] == "True"
        time.sleep(1.0)
        assert running(agent_pods(admin, "yk-p1").get(L2))  # kept: a lock is left
        patch_node(admin, "yk-p1", {"annotations": {hold: None}})
        wait_for("the L2 agent gone", lambda: agent_pods(admin, "yk-p1") == {}, 30)
    seen.check_protocol()
    for agent in AGENTS:
        assert seen.first(agent, "gone") <= seen.released(agent, by="start")
        assert seen.released(agent, by="end") <= seen.first(L2, "deleting")
    assert admin.node("yk-p1")["metadata"]["labels"][MAINTENANCE_LABEL] == "True"  # kept

    patch_node(admin, "yk-p1", {"labels": {HYPERVISOR: "true"}})  # back in service
    wait_for("the agents back on yk-p1", lambda: serving(admin, "yk-p1"), 30)
    assert not [e for e in operator.history() if e.what == "deleted-by-other"]


def decommission(promenade: Promenade, node: str, **params: Any) -> requests.Response:
    return promenade.post(f"/nodes/{node}/decommission", promenade.design(), **params)


def kubelet_shutdown_job(admin: Admin, node: str) -> None:
    """The kubelet-shutdown DaemonSet's pod as a Job: scheduled once Promenade labels the node,
    completed by kwok."""
    labels = {"application": "kubelet-shutdown"}
    admin.create(f"/apis/batch/v1/namespaces/{NS}/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"kubelet-off-{node}"},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": node, "promenade-decomission": "enabled"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "off", "image": "registry.invalid/off:1"}]}}}})


def ordinary_pod(admin: Admin, name: str, node: str) -> None:
    admin.create(f"/api/v1/namespaces/{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "registry.invalid/c:1"}]}})


def test_decommission_of_a_compute_node_follows_the_locks_and_never_evicts_an_agent(
        admin: Admin, operator: YaookOperator, yaook_promenade: Promenade) -> None:
    admin.ready_node("yk-d1", **{HYPERVISOR: "true"})
    ordinary_pod(admin, "yk-d1-web", "yk-d1")
    kubelet_shutdown_job(admin, "yk-d1")
    wait_for("the agents on yk-d1 under their locks", lambda: serving(admin, "yk-d1"), 30)
    uids = {a: p["metadata"]["uid"] for a, p in agent_pods(admin, "yk-d1").items()}

    with Observer(admin, "yk-d1") as seen:
        reply = decommission(yaook_promenade, "yk-d1", **{
            "drain-node-timeout": 30, "drain-node-grace-period": 1,
            "clear-labels-timeout": 10})
    assert reply.status_code == 200, reply.text
    messages = reply.json()["details"]["messageList"]
    done = [m["step"] for m in messages if m["message"].endswith(": succeeded")]
    assert done == ["drain", "clear-labels", "agent-locks", "remove-etcd", "etcd-ready",
                    "shutdown-kubelet"], messages
    [report] = [m["report"] for m in messages if m["step"] == "drain" and "report" in m]
    assert report["evicted"] == [f"{NS}/yk-d1-web"]  # the ordinary pod, never an agent
    # the agents still on the node when the drain listed it (their operator may already have
    # removed a dependent once the maintenance signal was given); never one evicted
    skipped = {s["pod"] for s in report["skipped"]}
    assert skipped <= {f"{YNS}/{a}-yk-d1" for a in (L2, *AGENTS)}, skipped

    seen.check_protocol()  # locks released after their agents, L2 last, on every snapshot
    for agent in AGENTS:
        assert seen.first(agent, "gone") <= seen.released(agent, by="start")
        assert seen.released(agent, by="end") <= seen.first(L2, "deleting")
    assert agent_pods(admin, "yk-d1") == {} and locks(admin, "yk-d1") == []
    ours = [e for e in operator.history() if e.node == "yk-d1"]
    assert not [e for e in ours if e.what == "deleted-by-other"]  # nobody else removed one
    deleted = {e.agent for e in ours if e.what == "agent-delete"}
    assert deleted == {L2, *AGENTS} and set(uids) == deleted
    assert admin.node("yk-d1")["metadata"]["labels"][MAINTENANCE_LABEL] == "True"


def test_a_lock_never_released_fails_the_decommission_naming_it_within_the_drain_timeout(
        admin: Admin, operator: YaookOperator, yaook_promenade: Promenade) -> None:
    admin.ready_node("yk-f1", **{HYPERVISOR: "true"})
    wait_for("the agents on yk-f1 under their locks", lambda: serving(admin, "yk-f1"), 30)
    stuck = LOCK_PREFIX + "stuck-agent"  # its operator never releases it
    patch_node(admin, "yk-f1", {"annotations": {stuck: ""}})

    started = time.monotonic()
    reply = decommission(yaook_promenade, "yk-f1", **{
        "drain-node-timeout": 4, "drain-node-grace-period": 1, "clear-labels-timeout": 5})
    elapsed = time.monotonic() - started
    body = reply.json()
    assert reply.status_code == 500 and body["details"]["failed_step"] == "agent-locks", body
    assert elapsed < 4 + 60, elapsed  # the drain timeout bounds the wait, not the call's 120 s
    named = [m["message"] for m in body["details"]["messageList"] if m["error"]]
    assert any(stuck in m for m in named), named
    assert not any(LOCK_PREFIX + a in m for m in named for a in AGENTS), named  # released
    # The dependents went, the L2 agent stays while the lock is held.
    assert set(agent_pods(admin, "yk-f1")) == {L2} and running(agent_pods(admin, "yk-f1")[L2])
    assert locks(admin, "yk-f1") == [stuck]
    labels = admin.node("yk-f1")["metadata"]["labels"]
    assert "promenade-decomission" not in labels  # the kubelet was never touched

    patch_node(admin, "yk-f1", {"annotations": {stuck: None}})
    wait_for("the L2 agent gone once the lock is released",
             lambda: agent_pods(admin, "yk-f1") == {}, 30)


def test_a_drain_alone_signals_maintenance_evicts_the_rest_and_leaves_the_agents_to_yaook(
        admin: Admin, operator: YaookOperator, yaook_promenade: Promenade) -> None:
    """The drain does not wait for the locks (their release needs the maintenance signal it
    gives): the dependents leave through their operator, the L2 agent stays while the node
    keeps its scheduling label."""
    admin.ready_node("yk-r1", **{HYPERVISOR: "true"})
    ordinary_pod(admin, "yk-r1-web", "yk-r1")
    wait_for("the agents on yk-r1 under their locks", lambda: serving(admin, "yk-r1"), 30)
    reply = yaook_promenade.post("/nodes/yk-r1/drain", timeout=20, **{"grace-period": 1})
    assert reply.status_code == 200, reply.text  # a drain waiting for the locks never ends
    assert reply.json()["details"]["evicted"] == [f"{NS}/yk-r1-web"]
    assert admin.node("yk-r1")["metadata"]["labels"][MAINTENANCE_LABEL] == "True"
    wait_for("the dependents removed by their operator and their locks released", lambda: (
        locks(admin, "yk-r1") == [] and set(agent_pods(admin, "yk-r1")) == {L2}), 30)
    assert running(agent_pods(admin, "yk-r1")[L2])
    assert not [e for e in operator.history()
                if e.node == "yk-r1" and e.what == "deleted-by-other"]


def test_a_fenced_decommission_of_a_dead_compute_node_completes_once_its_locks_are_released(
        admin: Admin, operator: YaookOperator, yaook_promenade: Promenade) -> None:
    """Powered off, the node's agents never stop by themselves: the out-of-service taint
    lets the real pod garbage collector remove them (and the ordinary pod), the operator
    releases each lock once its agent is gone, and agent-locks then passes."""
    admin.ready_node("yk-x1", **{HYPERVISOR: "true"})
    ordinary_pod(admin, "yk-x1-web", "yk-x1")
    wait_for("the agents on yk-x1 under their locks", lambda: serving(admin, "yk-x1"), 30)
    admin.kubelet("yk-x1", False)  # powered off
    wait_for("yk-x1 not Ready", lambda: admin.ready("yk-x1") != "True", 120)
    assert locks(admin, "yk-x1") == sorted(LOCK_PREFIX + a for a in AGENTS)

    reply = decommission(yaook_promenade, "yk-x1", fenced="true", **{
        "drain-node-timeout": 90, "drain-node-grace-period": 1, "clear-labels-timeout": 10})
    assert reply.status_code == 200, reply.text
    messages = reply.json()["details"]["messageList"]
    done = [m["step"] for m in messages if m["message"].endswith(": succeeded")]
    assert done[:3] == ["fence", "clear-labels", "agent-locks"], messages
    [report] = [m["report"] for m in messages if m["step"] == "fence" and "report" in m]
    assert sorted(report["removed"]) == sorted(
        [f"{NS}/yk-x1-web", *(f"{YNS}/{a}-yk-x1" for a in (L2, *AGENTS))]), report
    assert admin.pods_on("yk-x1") == [] and agent_pods(admin, "yk-x1") == {}
    assert locks(admin, "yk-x1") == []  # each released by the operator, none by Promenade
    ours = [e for e in operator.history() if e.node == "yk-x1"]
    released = [i for i, e in enumerate(ours) if e.what == "lock-released"]
    assert {ours[i].agent for i in released} == set(AGENTS)
    # On a dead node the pod GC removes what the operator has not deleted yet (the L2 agent
    # in the runs seen, with the locks still held); the operator itself never deletes the L2
    # agent while a lock is held.
    by_gc = {e.agent for e in ours if e.what == "deleted-by-other"}
    by_operator = [i for i, e in enumerate(ours) if e.what == "agent-delete"]
    assert by_gc | {ours[i].agent for i in by_operator} == {L2, *AGENTS}, ours
    assert all(i > max(released) for i in by_operator if ours[i].agent == L2), ours
    assert admin.node("yk-x1")["metadata"]["labels"][MAINTENANCE_LABEL] == "True"
