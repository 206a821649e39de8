"""Decommission runs every step in order; failures are DisassociateStepFailure with details."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import NotFound
from promenade_api.decommission import DecommissionParams, decommission
from promenade_api.errors import DisassociateStepFailure
from promenade_api.etcd.design import load_clusters
from promenade_api.kube.model import EvictResult

from .conftest import etcd_doc, kubernetes_cluster


def clusters():
    return load_clusters([etcd_doc([kubernetes_cluster(2)])])


def kubelet_stops_after(kube, clock, node, seconds=2):
    clock.at(seconds, lambda: kube.nodes.__setitem__(node, replace(kube.nodes[node],
                                                                    ready="Unknown")))


def test_decommission_runs_every_step(svc, kube, etcd, clock):
    kube.add_pod("web", "node01")
    kubelet_stops_after(kube, clock, "node01")
    messages = decommission(svc, "node01", clusters(), DecommissionParams())
    assert list(dict.fromkeys(m["step"] for m in messages)) == [
        "drain", "clear-labels", "agent-locks", "remove-etcd", "etcd-ready", "shutdown-kubelet"]
    assert etcd.removed == ["node01"] and kube.pod_names("node01") == []
    assert "kubernetes-etcd" not in kube.nodes["node01"].labels
    assert kube.nodes["node01"].labels["promenade-decomission"] == "enabled"


def test_a_kubelet_shutdown_failure_is_only_a_warning(svc, etcd):
    messages = decommission(svc, "node01", clusters(), DecommissionParams())
    kubelet = [m for m in messages if m["step"] == "shutdown-kubelet"]
    assert kubelet and not any(m["error"] for m in kubelet)
    assert "ShutdownKubeletError" in kubelet[0]["message"]
    assert etcd.removed == ["node01"]


def test_a_failed_drain_stops_the_decommission_with_details(svc, kube, etcd):
    kube.add_pod("db-0", "node01")
    kube.evict_script["db-0"] = [EvictResult("retry", "disruption budget")] * 100
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node01", clusters(), DecommissionParams(drain_timeout=20,
                                                                   drain_grace_period=5))
    body = err.value.to_status()
    assert body["code"] == 500 and body["reason"] == "DisassociateStepFailure"
    assert body["details"]["failed_step"] == "drain"
    assert any("db-0" in m["message"] for m in body["details"]["messageList"])
    assert etcd.removed == [] and "kubernetes-etcd" in kube.nodes["node01"].labels


def test_a_refused_etcd_removal_fails_the_decommission_after_drain_and_labels(svc, kube, etcd):
    etcd.down.add("node03")
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node01", clusters(), DecommissionParams())
    assert err.value.details["failed_step"] == "remove-etcd"
    steps = [(m["step"], m["error"]) for m in err.value.messages]
    assert ("drain", False) in steps and ("remove-etcd", True) in steps


def test_decommission_of_an_unknown_node_is_not_found(svc):
    with pytest.raises(NotFound):
        decommission(svc, "ghost", clusters(), DecommissionParams())


L2_LOCK = "l2-lock.maintenance.yaook.cloud/nova-compute"
YAOOK_AGENT = {"state.yaook.cloud/parent-plural": "novacomputenodes"}


def test_decommission_awaits_the_agents_after_clear_labels_not_before_evicting(
        svc, kube, etcd, clock):
    """Spec 002: the operator removes its agent once the node is signalled (here 30 s after
    clear-labels took the scheduling label away), then releases the lock; nothing waits for
    the lock before that, and etcd and the kubelet come only after it."""
    kube.add_pod("web", "node01")
    agent = kube.add_pod("nova-compute-0", "node01", owner=("StatefulSet", "nova-compute"),
                         labels=dict(YAOOK_AGENT))
    kube.patch_node("node01", labels={"compute.yaook.cloud/hypervisor": "true"},
                    annotations={L2_LOCK: ""})
    order: list[str] = []

    def operator() -> None:  # polls like an operator: leaves once the key is gone
        if "compute.yaook.cloud/hypervisor" in kube.nodes["node01"].labels:
            clock.at(1, operator)
        elif agent.uid in kube.pods:
            order.append(f"agent deleted at {clock() - start:.0f}")
            del kube.pods[agent.uid]
            clock.at(30, operator)
        else:
            order.append(f"lock released at {clock() - start:.0f}")
            kube.patch_node("node01", annotations={L2_LOCK: None})
            kubelet_stops_after(kube, clock, "node01")

    start = clock()
    clock.at(1, operator)
    messages = decommission(svc, "node01", clusters(), DecommissionParams(drain_timeout=120,
                                                                   drain_grace_period=5))
    assert [m["step"] for m in messages if m["message"].endswith("succeeded")] == [
        "drain", "clear-labels", "agent-locks", "remove-etcd", "etcd-ready", "shutdown-kubelet"]
    assert order[0].startswith("agent deleted") and order[1].startswith("lock released")
    assert kube.evictions == ["web"]  # the agent was never evicted
    assert L2_LOCK not in kube.nodes["node01"].annotations


def test_a_lock_never_released_fails_the_decommission_naming_it_within_the_drain_timeout(
        svc, kube, etcd, clock):
    kube.add_pod("web", "node01")
    kube.patch_node("node01", annotations={L2_LOCK: ""})
    start = clock()
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node01", clusters(), DecommissionParams(drain_timeout=40,
                                                                       drain_grace_period=5))
    body = err.value.to_status()
    assert body["details"]["failed_step"] == "agent-locks"
    assert any(L2_LOCK in m["message"] and m["error"] for m in body["details"]["messageList"])
    assert clock() - start <= 40 + 5  # the drain timeout bounds the wait
    assert kube.pod_names("node01") == []  # the node's other pods were drained first
    assert etcd.removed == []  # nothing past the agents was done
