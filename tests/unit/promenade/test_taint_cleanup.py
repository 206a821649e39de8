"""Berth's out-of-service taint: marked at the fence, removed when the node is Ready again or
at its deadline (node reads and the sweep), never one Berth did not apply."""

from __future__ import annotations

from dataclasses import replace

from promenade_api.decommission import DecommissionParams, decommission
from promenade_api.kube.fence import OUT_OF_SERVICE
from promenade_api.kube.taints import TAINT_ANNOTATION, berth_taint

from .test_failed_nodes import clusters, control_plane_deletes_untolerating_pods, dead

KEY = OUT_OF_SERVICE["key"]


def fenced(svc, kube, etcd, node: str = "node02") -> None:
    dead(kube, node)
    etcd.down.add(node)
    control_plane_deletes_untolerating_pods(kube)
    decommission(svc, node, clusters(), DecommissionParams(fenced=True))


def test_the_fence_marks_its_taint_with_a_deadline(svc, kube, etcd, clock):
    fenced(svc, kube, etcd)
    mark = berth_taint(kube.nodes["node02"])
    assert mark is not None and mark["taint"] == KEY and mark["by"] == "promenade fence"
    assert mark["deadline"] > mark["applied_at"]


def test_a_fenced_node_that_is_ready_again_loses_the_taint_on_the_next_read(
        svc, kube, etcd):
    fenced(svc, kube, etcd)
    svc.node_view("node02")  # still down: kept
    assert kube.nodes["node02"].has_taint(KEY, "NoExecute")
    kube.nodes["node02"] = replace(kube.nodes["node02"], ready="True")
    view = svc.node_view("node02")
    assert not any(t["key"] == KEY for t in view["taints"])
    assert TAINT_ANNOTATION not in kube.nodes["node02"].annotations


def test_the_sweep_removes_a_taint_past_its_deadline_on_a_node_still_down(
        svc, kube, etcd, clock):
    fenced(svc, kube, etcd)
    sweeper = svc.taint_sweeper()
    assert sweeper.sweep() == []
    clock.sleep(svc.settings.taint_deadline + 1)
    assert sweeper.sweep() == ["node02"]
    assert not kube.nodes["node02"].has_taint(KEY, "NoExecute")


def test_a_taint_berth_did_not_apply_is_never_removed(svc, kube, clock):
    kube.add_taint("node01", dict(OUT_OF_SERVICE))  # an operator's, on a Ready node
    clock.sleep(10 ** 6)
    assert svc.taint_sweeper().sweep() == []
    svc.node_view("node01")
    assert kube.nodes["node01"].has_taint(KEY, "NoExecute")
