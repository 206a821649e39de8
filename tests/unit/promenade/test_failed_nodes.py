"""Decommission of dead, fenced, absent and half-torn-down nodes; cancellation at safe points."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promenade_api.decommission import DecommissionParams, decommission, request_cancel
from promenade_api.errors import DisassociateStepFailure, NodeNotReady, OperationCancelled
from promenade_api.etcd.design import load_clusters
from promenade_api.kube.fence import OUT_OF_SERVICE
from promenade_api.kube.model import EvictResult

from .conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"


def clusters(*extra: dict) -> list:
    return load_clusters([etcd_doc([kubernetes_cluster(2), *extra])])


def dead(kube, node: str) -> None:
    kube.nodes[node] = replace(kube.nodes[node], ready="Unknown",
                               ready_since="2026-11-24T03:00:00Z")


def control_plane_deletes_untolerating_pods(kube) -> None:
    """What the taint manager and the pod GC do once the out-of-service taint is there."""
    def on_taint(node: str, taint: dict) -> None:
        for uid, pod in list(kube.pods.items()):
            if pod.node == node and not pod.tolerates(taint):
                del kube.pods[uid]
    kube.on_taint = on_taint


def test_a_not_ready_node_is_refused_at_once_and_left_untouched(svc, kube, etcd, clock):
    kube.add_pod("web", "node02")
    dead(kube, "node02")
    started = clock()
    with pytest.raises(NodeNotReady) as err:
        decommission(svc, "node02", clusters(), DecommissionParams())
    assert clock() == started  # no drain timeout was waited for
    assert "node02 is not Ready (Ready=Unknown since 2026-11-24T03:00:00Z)" in err.value.message
    assert err.value.code == 409
    assert not kube.nodes["node02"].unschedulable and kube.evictions == []
    assert etcd.removed == [] and kube.pod_names("node02") == ["web"]


def test_fenced_node_loses_its_pods_through_the_out_of_service_taint(svc, kube, etcd):
    kube.add_pod("web", "node02")
    kube.add_pod("agent", "node02", owner=("DaemonSet", "ds"),
                 tolerations=({"operator": "Exists"},))
    dead(kube, "node02")
    etcd.down.add("node02")  # its etcd member died with it
    control_plane_deletes_untolerating_pods(kube)
    messages = decommission(svc, "node02", clusters(), DecommissionParams(fenced=True))
    node = kube.nodes["node02"]
    assert node.unschedulable and node.has_taint(OUT_OF_SERVICE["key"], "NoExecute")
    assert kube.evictions == [] and kube.pod_names("node02") == ["agent"]
    # The maintenance signal, so per-node agents' operators do not recreate what the taint
    # removes and release their locks (spec 002).
    assert node.labels["maintenance.yaook.cloud/maintenance-required-l2-agent"] == "True"
    assert node.labels["maintenance.berth.io/required"] == "true"
    assert etcd.removed == ["node02"]  # a dead member counted as already lost
    text = [m["message"] for m in messages]
    assert text[0] == "fence: succeeded"
    assert "shutdown-kubelet: skipped: node02 is powered off" in text
    assert any("is down" in t and "counted as lost" in t for t in text)


def test_fencing_fails_naming_the_pods_the_control_plane_left(svc, kube):
    kube.add_pod("web", "node04")
    dead(kube, "node04")
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node04", clusters(), DecommissionParams(fenced=True,
                                                                   drain_timeout=5))
    assert err.value.details["failed_step"] == "fence"
    assert any("default/web" in m["message"] for m in err.value.messages)


def test_a_node_gone_from_kubernetes_only_loses_its_etcd_member(svc, kube, etcd):
    del kube.nodes["node03"]
    messages = decommission(svc, "node03", clusters(), DecommissionParams())
    assert etcd.removed == ["node03"]
    skipped = [m["message"] for m in messages if "skipped" in m["message"]]
    assert skipped == ["drain: skipped: node03 is not known to Kubernetes",
                       "clear-labels: skipped: node03 is not known to Kubernetes",
                       "agent-locks: skipped: node03 is not known to Kubernetes",
                       "shutdown-kubelet: skipped: node03 is not known to Kubernetes"]


def test_a_second_decommission_after_the_node_is_gone_is_a_success(svc, kube, etcd):
    del kube.nodes["node03"]
    decommission(svc, "node03", clusters(), DecommissionParams())
    again = decommission(svc, "node03", clusters(), DecommissionParams())
    assert etcd.removed == ["node03"]
    assert any("already removed" in m["message"] for m in again)


def test_a_design_node_unknown_to_kubernetes_is_decommissioned(svc, kube, etcd):
    messages = decommission(svc, "node09", clusters(), DecommissionParams(), {"node09"})
    assert etcd.removed == [] and all(not m["error"] for m in messages)


def test_an_unreachable_cluster_without_a_member_on_the_node_does_not_block(svc, kube, etcd):
    other = {"name": "calico", "client_endpoints": ["http://127.0.0.1:2390"],
             "members": [{"name": "c1", "node": "node01"}],
             "thresholds": {"minimum_healthy_members": 1}}
    etcd.unreachable_clusters.add("calico")
    decommission(svc, "node04", clusters(other), DecommissionParams())
    assert kube.pod_names("node04") == []


def test_a_learner_in_the_cluster_refuses_the_removal(svc, kube, etcd):
    etcd.clusters["kubernetes"].append(replace(etcd.clusters["kubernetes"][0], id=9,
                                               name="node09"))
    etcd.learners.add("node09")
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node01", clusters(), DecommissionParams())
    assert err.value.details["failed_step"] == "remove-etcd"
    assert any("learner (node09)" in m["message"] for m in err.value.messages)
    assert etcd.removed == []


def test_removing_a_dead_member_that_would_lose_quorum_is_refused(svc, kube, etcd):
    dead(kube, "node02")
    etcd.down.update({"node02", "node03"})
    with pytest.raises(DisassociateStepFailure) as err:
        decommission(svc, "node02", clusters(), DecommissionParams(fenced=True))
    assert err.value.details["failed_step"] == "remove-etcd" and etcd.removed == []


def test_a_cancelled_drain_stops_at_the_next_safe_point(svc, kube, etcd, clock):
    kube.add_pod("db-0", "node04")
    kube.evict_script["db-0"] = [EvictResult("retry", "disruption budget")] * 1000
    started = clock()
    clock.at(3, lambda: request_cancel(kube, "node04", clock()))
    with pytest.raises(OperationCancelled) as err:
        decommission(svc, "node04", clusters(), DecommissionParams(drain_timeout=3000,
                                                                   drain_grace_period=5))
    assert clock() - started < 30  # not the drain timeout
    assert err.value.code == 409 and err.value.details["phase"] == "drain"
    assert kube.pod_names("node04") == ["db-0"]


def test_an_old_cancellation_does_not_stop_a_new_decommission(svc, kube, etcd, clock):
    request_cancel(kube, "node04", clock())
    clock.sleep(1)
    decommission(svc, "node04", clusters(), DecommissionParams())


def test_api_fenced_flag_and_cancel(api, design, kube, etcd):
    client, h = api
    ref = {"rel": "design", "href": design(etcd_doc([kubernetes_cluster(2)])),
           "type": "application/x-yaml"}
    dead(kube, "node04")
    refused = client.simulate_post(f"{P}/nodes/node04/decommission", json=ref, headers=h)
    assert refused.status_code == 409 and refused.json["reason"] == "NodeNotReady"
    bad = client.simulate_post(f"{P}/nodes/node04/decommission", json=ref, headers=h,
                               params={"fenced": "yes"})
    assert bad.status_code == 400 and "fenced must be true or false" in bad.text
    ok = client.simulate_post(f"{P}/nodes/node04/decommission", json=ref, headers=h,
                              params={"fenced": "true"})
    assert ok.status_code == 200, ok.text
    cancel = client.simulate_post(f"{P}/nodes/node04/decommission/cancel", headers=h)
    assert cancel.status_code == 200 and cancel.json["details"]["cancel_requested"] is True
    ghost = client.simulate_post(f"{P}/nodes/ghost/decommission/cancel", headers=h)
    assert ghost.json["details"]["cancel_requested"] is False
