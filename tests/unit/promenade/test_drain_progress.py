"""Drain progress: pods left grouped by why they are still there, published on the Node."""

from __future__ import annotations

import json

import pytest

from common.context import current_marker
from promenade_api.errors import DrainNodeError
from promenade_api.kube.client import eviction_outcome
from promenade_api.kube.model import EvictResult
from promenade_api.kube.progress import (
    HOLD,
    PROGRESS_ANNOTATION,
    TERMINATING,
    DrainProgress,
    refusal_reason,
)

PDB = EvictResult("retry", "Cannot evict pod as it would violate the pod's disruption budget. "
                           "The disruption budget web needs 3 healthy pods and has 3 currently")


def published(kube, node="node04"):
    return json.loads(kube.nodes[node].annotations[PROGRESS_ANNOTATION])


def test_a_pdb_refusal_names_the_budget():
    assert refusal_reason(PDB.message) == (
        "PDB web allows 0 disruptions (needs 3 healthy pods, has 3)")
    assert refusal_reason("too many requests") == "eviction refused: too many requests"


def test_the_kubernetes_client_keeps_the_budget_cause_of_a_429():
    from promenade_api.kube.client import ApiFailure
    body = {"kind": "Status", "code": 429, "message": "Cannot evict pod as it would violate "
            "the pod's disruption budget.", "details": {"causes": [
                {"reason": "DisruptionBudget",
                 "message": "The disruption budget web needs 2 healthy pods and has 2 "
                            "currently"}]}}
    result = eviction_outcome(ApiFailure(429, body["message"], body))
    assert result.outcome == "retry"
    assert refusal_reason(result.message).startswith("PDB web allows 0 disruptions")


def test_progress_groups_pods_by_reason_and_publishes_only_changes():
    records = []
    progress = DrainProgress("node04", "m-1", 10.0, lambda: 11.0, records.append)
    progress.set(["a/web-1", "a/web-2", "a/web-3"], "PDB web allows 0 disruptions")
    progress.set(["a/db-0"], HOLD)
    progress.flush()
    progress.flush()
    assert len(records) == 1
    record = records[0]
    assert record["pods_left"] == 4 and record["marker"] == "m-1"
    assert [(g["reason"], g["count"]) for g in record["groups"]] == [
        ("PDB web allows 0 disruptions", 3), (HOLD, 1)]
    progress.gone(["a/web-1"])
    progress.flush()
    assert records[-1]["pods_left"] == 3 and records[-1]["removed"] == 1


def test_a_failing_publisher_never_fails_the_drain():
    def boom(record):
        raise RuntimeError("API down")

    progress = DrainProgress("node04", None, 0.0, lambda: 0.0, boom)
    progress.set(["a/b"], "x")
    progress.flush()  # no exception


def test_drain_publishes_pdb_blocked_pods_while_it_retries(svc, kube, clock):
    for n in (1, 2, 3):
        kube.add_pod(f"web-{n}", "node04")
        kube.evict_script[f"web-{n}"] = [PDB, PDB]
    kube.add_pod("batch", "node04")
    seen = []
    clock.at(1.0, lambda: seen.append(published(kube)))
    current_marker.set("marker-1")
    svc.drain("node04", 3600, 1800)
    during = seen[0]
    assert during["phase"] == "evicting" and during["marker"] == "marker-1"
    assert during["groups"] == [{"reason": "PDB web allows 0 disruptions (needs 3 healthy "
                                           "pods, has 3)", "count": 3,
                                 "pods": ["default/web-1", "default/web-2", "default/web-3"]}]
    final = published(kube)
    assert final["phase"] == "done" and final["pods_left"] == 0 and final["removed"] == 4


def test_drain_publishes_the_eviction_lock_and_its_holder(svc, kube, clock):
    kube.add_pod("web-1", "node04")
    lock = "eviction-lock.berth.io/ceph-osd"
    kube.patch_node("node04", annotations={lock: "neutron-l2-agent-x7"})
    seen = []
    clock.at(1.0, lambda: seen.append(published(kube)))
    clock.at(6.0, lambda: kube.patch_node("node04", annotations={lock: None}))
    svc.drain("node04", 3600, 1800)
    assert seen[0]["phase"] == "waiting for eviction locks"
    assert seen[0]["groups"] == [{"reason": f"eviction lock {lock} held by neutron-l2-agent-x7",
                                  "count": 1, "pods": ["default/web-1"]}]
    assert published(kube)["phase"] == "done"


def test_pods_that_do_not_leave_show_as_terminating_and_the_record_ends_failed(svc, kube):
    kube.add_pod("stuck", "node04")
    kube.lingering.add("stuck")
    with pytest.raises(DrainNodeError):
        svc.drain("node04", 30, 10)
    record = published(kube)
    assert record["phase"] == "failed"
    assert record["groups"] == [{"reason": TERMINATING, "count": 1, "pods": ["default/stuck"]}]


def test_the_node_view_shows_the_drain_progress(svc, kube):
    assert svc.node_view("node04")["drain_progress"] is None
    kube.add_pod("web-1", "node04")
    svc.drain("node04", 3600, 1800)
    assert svc.node_view("node04")["drain_progress"]["phase"] == "done"


def test_fencing_publishes_the_pods_the_control_plane_has_yet_to_delete(svc, kube):
    from dataclasses import replace

    from promenade_api.kube.fence import FENCED
    kube.add_pod("web", "node04")
    kube.nodes["node04"] = replace(kube.nodes["node04"], ready="Unknown")
    with pytest.raises(DrainNodeError):
        svc.fence("node04", 3, lambda: None)
    record = published(kube)
    assert record["phase"] == "failed"
    assert record["groups"] == [{"reason": FENCED, "count": 1, "pods": ["default/web"]}]
    kube.on_taint = None
    kube.pods.clear()
    svc.fence("node04", 3, lambda: None)
    assert published(kube)["phase"] == "done" and published(kube)["pods_left"] == 0
