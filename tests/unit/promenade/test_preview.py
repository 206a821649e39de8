"""The decommission preview: what a decommission would do, its blockers and warnings, and
that asking changes nothing in Kubernetes or etcd."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promenade_api.kube.budget import Budget, pod_requests, selector_matches
from promenade_api.kube.model import Lease
from promenade_api.preview import PreviewParams, preview
from tests.unit.promenade.conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"
WEB = {"matchLabels": {"app": "web"}}


@pytest.fixture
def ref(design):
    return {"rel": "design", "href": design(etcd_doc([kubernetes_cluster(2)])),
            "type": "application/x-yaml"}


@pytest.fixture
def site(kube):
    """node04 runs two web pods (500m, 1Gi each), a DaemonSet pod, a mirror pod and a bare
    pod with an emptyDir; node03 has room for one more web pod only."""
    for name in ("node01", "node02", "node03"):
        kube.nodes[name] = replace(kube.nodes[name], cpu_m=1000, memory=2**32)
    kube.nodes["node04"] = replace(kube.nodes["node04"], cpu_m=4000, memory=2**33)
    kube.nodes["node01"] = replace(kube.nodes["node01"], unschedulable=True)
    kube.nodes["node02"] = replace(kube.nodes["node02"], ready="False")
    for i in (1, 2):
        kube.add_pod(f"web-{i}", "node04", labels={"app": "web"}, cpu_m=500, memory=2**30)
    kube.add_pod("busy", "node03", cpu_m=400, memory=2**30)
    kube.add_pod("agent", "node04", namespace="kube-system", owner=("DaemonSet", "ds"))
    kube.add_pod("static", "node04", owner=None,
                 annotations={"kubernetes.io/config.mirror": "x"})
    kube.add_pod("scratch", "node04", owner=None, has_empty_dir=True)
    return kube


def _writes(kube) -> list[tuple[str, str]]:
    return [c for c in kube.calls if c[0] in ("evict", "delete_pod", "add_taint",
                                              "create_lease", "update_lease", "delete_node")]


def test_preview_lists_pods_to_evict_and_skipped_with_reasons(svc, site):
    out = preview(svc, "node04", [], PreviewParams(), {"node04"})
    evict = {p["pod"]: p["reason"] for p in out["drain"]["evict"]}
    assert set(evict) == {"default/web-1", "default/web-2", "default/scratch"}
    assert "emptyDir data is deleted" in evict["default/scratch"]
    assert "not recreated" in evict["default/scratch"]
    skipped = {p["pod"]: p["reason"] for p in out["drain"]["skipped"]}
    assert skipped == {"kube-system/agent": "managed by DaemonSet ds",
                       "default/static": "mirror pod"}
    assert out["drain"]["can_finish"] is True
    assert _writes(site) == [] and site.nodes["node04"].unschedulable is False


def test_capacity_counts_free_room_on_schedulable_nodes_and_pods_left_pending(svc, site):
    out = preview(svc, "node04", [], PreviewParams(), {"node04"})
    room = out["capacity"]
    assert room["requests"] == {"cpu_m": 1000, "memory": 2 * 2**30}
    assert [n["node"] for n in room["nodes"]] == ["node03"]  # node01 cordoned, node02 NotReady
    assert room["free"] == {"cpu_m": 600, "memory": 2**32 - 2**30}
    assert [p["pod"] for p in room["pending"]] == ["default/web-2"]
    assert "500m CPU" in room["pending"][0]["reason"]
    assert room["not_recreated"] == ["default/scratch"]
    assert any("would stay Pending" in w for w in out["warnings"])


def test_budget_at_zero_is_a_blocker_and_the_drain_cannot_finish(svc, site):
    site.budgets = [Budget("default", "web", WEB, min_available=2, disruptions_allowed=0,
                           current_healthy=2, desired_healthy=2, expected_pods=2)]
    out = preview(svc, "node04", [], PreviewParams(), {"node04"})
    [budget] = out["drain"]["budgets"]
    assert budget["pods_on_node"] == ["default/web-1", "default/web-2"]
    assert budget["never_allows"] is True
    assert out["drain"]["can_finish"] is False
    assert out["drain"]["blocked_by"] == ["PodDisruptionBudget default/web"]
    assert any("allows 0 disruptions now" in b and "can never finish" in b
               for b in out["blockers"])


def test_budget_counting_unhealthy_pods_and_held_locks_are_warnings(svc, site):
    site.budgets = [Budget("default", "web", WEB, disruptions_allowed=1, current_healthy=3,
                           desired_healthy=2, expected_pods=4)]
    site.nodes["node04"] = replace(site.nodes["node04"], annotations={
        "eviction-lock.berth.io/agent": "busy"})
    out = preview(svc, "node04", [], PreviewParams(), {"node04"})
    assert out["blockers"] == []
    assert any("counts 1 unhealthy" in w for w in out["warnings"])
    assert any("covers 2 pods here" in w for w in out["warnings"])
    assert out["drain"]["eviction_locks"] == ["eviction-lock.berth.io/agent"]
    [held] = [w for w in out["warnings"] if w.startswith(
        "Eviction lock eviction-lock.berth.io/agent held by busy on node04: nothing is "
        "evicted until it is released; it holds back ")]
    [lock] = [b for b in out["drain"]["blocking"] if b["kind"] == "EvictionLock"]
    assert (lock["annotation"], lock["holder"]) == ("eviction-lock.berth.io/agent", "busy")
    assert "default/web-1" in lock["pods"] and ", ".join(lock["pods"]) in held


def test_fenced_preview_ignores_budgets_the_taint_bypasses(svc, site):
    site.budgets = [Budget("default", "web", WEB, disruptions_allowed=0, current_healthy=2,
                           desired_healthy=2, expected_pods=2)]
    out = preview(svc, "node04", [], PreviewParams(fenced=True), {"node04"})
    assert out["blockers"] == [] and out["drain"]["can_finish"] is True
    assert [p["phase"] for p in out["phases"]][0] == "fence"


def test_etcd_quorum_before_and_after_leader_move_and_in_flight_removal(svc, kube, etcd,
                                                                       design, clock):
    clusters = svc.clusters(design(etcd_doc([kubernetes_cluster(2)])), None)
    kube.leases[("kube-system", "berth-etcd-kubernetes")] = Lease(
        "berth-etcd-kubernetes", "promenade-other", clock(), 60)
    out = preview(svc, "node02", clusters, PreviewParams(), {"node02"})
    [entry] = out["etcd"]
    assert entry["before"] == {"members": 3, "healthy": 3, "quorum": 2}
    assert entry["after"] == {"members": 2, "healthy": 2, "quorum": 2}
    assert entry["leader_move"] is True and entry["allowed"] is True
    assert entry["removal_in_flight"] == "promenade-other"
    assert out["blockers"] == []
    assert any("in flight" in w for w in out["warnings"])
    assert etcd.removed == [] and etcd.moves == []


def test_etcd_removal_that_would_lose_quorum_or_has_a_learner_is_blocked(svc, etcd, design):
    clusters = svc.clusters(design(etcd_doc([kubernetes_cluster(2)])), None)
    etcd.down.add("node03")
    out = preview(svc, "node01", clusters, PreviewParams(), {"node01"})
    assert out["etcd"][0]["allowed"] is False
    assert any("is refused" in b and "below the quorum of 2" in b for b in out["blockers"])
    etcd.down.clear()
    etcd.learners.add("node03")
    out = preview(svc, "node01", clusters, PreviewParams(), {"node01"})
    assert out["etcd"][0]["learners"] == ["node03"]
    assert any("has a learner" in b for b in out["blockers"])


def test_not_ready_node_unfenced_is_a_blocker_not_an_error(svc, kube):
    kube.nodes["node04"] = replace(kube.nodes["node04"], ready="Unknown")
    out = preview(svc, "node04", [], PreviewParams(), {"node04"})
    assert any("is not Ready" in b for b in out["blockers"])


def test_pod_requests_and_selectors():
    spec = {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                           {"resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}]}
    assert pod_requests(spec) == (2000, 64 * 2**20)
    assert selector_matches({"matchExpressions": [{"key": "a", "operator": "In",
                                                   "values": ["x"]}]}, {"a": "x"})
    assert not selector_matches({}, {"a": "x"})


def test_preview_endpoint_answers_and_changes_nothing(api, ref, kube, etcd):
    client, h = api
    resp = client.simulate_post(f"{P}/nodes/node01/decommission/preview", json=ref,
                                headers=h, params={"leaving": "node02"})
    assert resp.status_code == 200, resp.text
    body = resp.json
    assert body["node"] == "node01" and body["etcd"][0]["removing"] == ["node01"]
    assert [p["phase"] for p in body["phases"]] == [
        "drain", "clear-labels", "agent-locks", "remove-etcd", "etcd-ready", "shutdown-kubelet"]
    assert _writes(kube) == [] and etcd.removed == []


def test_preview_endpoint_bad_query_is_400_listing_each_problem(api, ref):
    client, h = api
    resp = client.simulate_post(f"{P}/nodes/node01/decommission/preview", json=ref, headers=h,
                                query_string="fenced=maybe&bogus=1")
    assert resp.status_code == 400
    messages = [m["message"] for m in resp.json["details"]["messageList"]]
    assert len(messages) == 2


def test_etcd_removal_refused_once_the_other_leaving_members_are_gone_too(svc, design):
    clusters = svc.clusters(design(etcd_doc([kubernetes_cluster(2)])), None)
    alone = preview(svc, "node01", clusters, PreviewParams(), {"node01"})
    assert alone["blockers"] == [] and alone["etcd"][0]["after_with_leaving"] is None
    out = preview(svc, "node01", clusters, PreviewParams(leaving=("node02", "node04")),
                  {"node01"})
    together = out["etcd"][0]["after_with_leaving"]
    assert together == {"members": 1, "healthy": 1, "quorum": 1, "also_leaving": ["node02"],
                        "allowed": False}
    assert any("once node02 (leaving in the same action) is removed too" in b
               and "minimum_healthy_members of 2" in b for b in out["blockers"])
