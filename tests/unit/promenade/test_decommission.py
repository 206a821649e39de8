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
        "drain", "clear-labels", "remove-etcd", "etcd-ready", "shutdown-kubelet"]
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
