"""Drain: kubectl's pod filters, PDB retries, eviction locks, holds, timeouts, failures."""

from __future__ import annotations

import pytest

from common.errors import BadRequest
from promenade_api.errors import DrainNodeError
from promenade_api.kube.drain import Drainer, DrainSettings, held_locks, validate_timeouts
from promenade_api.kube.model import MIRROR_ANNOTATION, EvictResult

from .conftest import FAST

RETRY = EvictResult("retry", "Cannot evict pod as it would violate the pod's disruption budget.")


def drainer(kube, clock, **overrides):
    settings = DrainSettings(**{**FAST.drain.__dict__, **overrides})
    return Drainer(kube, settings, clock=clock, sleep=clock.sleep)


def test_drain_cordons_labels_and_evicts_every_pod(kube, clock):
    kube.add_pod("web-1", "node04")
    kube.add_pod("web-2", "node04")
    report = drainer(kube, clock).run("node04", 3600, 1800)
    node = kube.nodes["node04"]
    assert node.unschedulable
    assert node.labels["maintenance.berth.io/required"] == "true"
    assert kube.pod_names("node04") == []
    assert sorted(report.evicted) == ["default/web-1", "default/web-2"]


def test_drain_skips_daemonset_and_mirror_pods(kube, clock):
    kube.add_pod("ds-pod", "node04", namespace="kube-system", owner=("DaemonSet", "ds"))
    kube.add_pod("static", "node04", owner=("Node", "node04"),
                 annotations={MIRROR_ANNOTATION: "x"})
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == ["ds-pod", "static"]
    assert {s["pod"] for s in report.skipped} == {"kube-system/ds-pod", "default/static"}


def test_drain_treats_configured_daemonset_like_kinds_as_daemonsets(kube, clock):
    kube.add_pod("agent", "node04", owner=("ConfiguredDaemonSet", "nova-compute"))
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == ["agent"]
    assert "DaemonSet-like" in report.skipped[0]["reason"]


def test_drain_protects_daemonset_like_owners_by_default(kube, clock):
    kube.add_pod("agent", "node04", owner=("ConfiguredDaemonSet", "nova-compute"))
    Drainer(kube, DrainSettings(retry_delay=0.0, lock_poll_interval=1.0), clock=clock,
            sleep=clock.sleep).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == ["agent"]


def test_a_kind_of_one_api_group_is_matched_by_group():
    from promenade_api.kube.drain import daemonset_like
    kinds = ("apps.kruise.io/DaemonSet",)
    assert daemonset_like("DaemonSet", "apps.kruise.io/v1alpha1", kinds)
    assert not daemonset_like("DaemonSet", "apps/v1", kinds)


def test_drain_evicts_pods_of_kinds_not_configured_as_daemonset_like(kube, clock):
    kube.add_pod("agent", "node04", owner=("ConfiguredDaemonSet", "nova-compute"))
    drainer(kube, clock, daemonset_like_kinds=()).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == []


def test_drain_removes_pods_of_a_deleted_daemonset_with_a_warning(kube, clock):
    kube.add_pod("orphan", "node04", owner=("DaemonSet", "gone-ds"))
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == []
    assert any("gone-ds" in w for w in report.warnings)


def test_drain_removes_unmanaged_and_emptydir_pods_with_warnings(kube, clock):
    kube.add_pod("bare", "node04", owner=None)
    kube.add_pod("cache", "node04", has_empty_dir=True)
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == []
    assert any("bare" in w and "controller" in w for w in report.warnings)
    assert any("cache" in w and "emptyDir" in w for w in report.warnings)


def test_drain_deletes_terminal_pods_instead_of_evicting(kube, clock):
    kube.add_pod("job", "node04", phase="Succeeded")
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.deletions == ["job"] and report.deleted == ["default/job"]


def test_drain_retries_a_pdb_refusal_after_the_retry_delay(kube, clock):
    kube.add_pod("db-0", "node04")
    kube.evict_script["db-0"] = [RETRY, RETRY]
    drainer(kube, clock, retry_delay=5.0).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == []
    assert clock.slept.count(5.0) == 2


def test_drain_fails_with_details_when_the_pdb_never_allows_and_keeps_the_node_cordoned(
        kube, clock):
    kube.add_pod("db-0", "node04")
    kube.add_pod("web", "node04")
    kube.evict_script["db-0"] = [RETRY] * 1000
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 30, 10)
    body = err.value.to_status()
    assert body["code"] == 500 and body["reason"] == "DrainNodeError"
    texts = [m["message"] for m in body["details"]["messageList"] if m["error"]]
    assert any("default/db-0" in t and "disruption budget" in t for t in texts)
    assert body["details"]["remaining_pods"] == ["default/db-0"]
    assert kube.nodes["node04"].unschedulable
    assert kube.pod_names("node04") == ["db-0"]


def test_drain_reports_a_500_eviction_as_that_pods_failure(kube, clock):
    kube.add_pod("multi", "node04")
    kube.evict_script["multi"] = [EvictResult("failed", "HTTP 500: This pod has more than one "
                                                        "PodDisruptionBudget")]
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 3600, 1800)
    assert "more than one PodDisruptionBudget" in err.value.messages[0]["message"]


def test_drain_treats_a_404_eviction_as_gone(kube, clock):
    kube.add_pod("p", "node04")
    kube.evict_script["p"] = [EvictResult("gone", 'pods "p" not found')]
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == [] and report.evicted == ["default/p"]


def test_drain_falls_back_to_delete_without_the_eviction_api(kube, clock):
    kube.add_pod("p", "node04")
    kube.eviction_supported = False
    report = drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.deletions == ["p"] and report.deleted == ["default/p"]


def test_drain_fails_when_a_pod_does_not_go_away(kube, clock):
    kube.add_pod("stuck", "node04")
    kube.lingering.add("stuck")
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 60, 10)
    assert "still present" in err.value.messages[0]["message"]


def test_drain_waits_for_eviction_locks_before_evicting(kube, clock):
    kube.add_pod("osd-client", "node04")
    kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph-osd": ""})
    clock.at(12, lambda: kube.patch_node(
        "node04", annotations={"eviction-lock.berth.io/ceph-osd": None}))
    start = clock()
    drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.pod_names("node04") == []
    assert clock() - start >= 12


YAOOK_AGENT = {"state.yaook.cloud/parent-plural": "novacomputenodes"}


def test_an_agent_lock_never_holds_an_eviction_and_the_agent_is_left_to_its_operator(
        kube, clock):
    """Spec 002: Yaook's l2-lock is released only after its agent is deleted, which the
    maintenance signal starts; waiting for it before evicting would wait for ever."""
    kube.add_pod("web-1", "node04")
    kube.add_pod("nova-compute-0", "node04", owner=("StatefulSet", "nova-compute"),
                 labels=dict(YAOOK_AGENT))
    kube.patch_node("node04", annotations={"l2-lock.maintenance.yaook.cloud/nova-compute": ""})
    start = clock()
    report = drainer(kube, clock).run("node04", 60, 10)
    assert clock() - start < 5
    assert report.evicted == ["default/web-1"]
    assert kube.pod_names("node04") == ["nova-compute-0"]  # never evicted
    assert report.skipped == [{"pod": "default/nova-compute-0",
                               "reason": "per-node agent, left to its operator"}]
    labels = kube.nodes["node04"].labels  # the signal the agents' operators obey
    assert labels["maintenance.yaook.cloud/maintenance-required-l2-agent"] == "True"
    assert labels["maintenance.berth.io/required"] == "true"


def test_drain_sets_the_maintenance_label_before_waiting_for_locks(kube, clock):
    kube.add_pod("p", "node04")
    kube.patch_node("node04", annotations={"eviction-lock.berth.io/ceph": "osd"})
    seen = []
    clock.at(1, lambda: seen.append(dict(kube.nodes["node04"].labels)))
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 20, 5)
    assert seen[0]["maintenance.berth.io/required"] == "true"
    assert kube.evictions == []
    assert err.value.details["locks"] == ["eviction-lock.berth.io/ceph"]
    assert err.value.details["remaining_pods"] == ["default/p"]
    assert "eviction-lock.berth.io/ceph" in err.value.messages[0]["message"]


def test_drain_evicts_hold_pods_last(kube, clock):
    kube.add_pod("a-held", "node04", annotations={"berth.io/eviction-hold": "true"})
    kube.add_pod("b", "node04")
    kube.add_pod("c", "node04")
    drainer(kube, clock).run("node04", 3600, 1800)
    assert kube.evictions[-1] == "a-held"


def test_hold_pods_stay_when_other_pods_could_not_be_evicted(kube, clock):
    kube.add_pod("held", "node04", annotations={"berth.io/eviction-hold": ""})
    kube.add_pod("db", "node04")
    kube.evict_script["db"] = [RETRY] * 100
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 20, 5)
    assert kube.pod_names("node04") == ["db", "held"] and "held" not in kube.evictions
    assert sorted(err.value.details["remaining_pods"]) == ["default/db", "default/held"]


def test_drain_of_an_unknown_node_is_not_found(kube, clock):
    from promenade_api.kube.port import KubeNotFound
    with pytest.raises(KubeNotFound):
        drainer(kube, clock).run("nope", 3600, 1800)


@pytest.mark.parametrize("timeout,grace", [(10, 10), (10, 20), (0, 0), (5, -1)])
def test_grace_period_must_be_less_than_timeout(timeout, grace):
    with pytest.raises(BadRequest):
        validate_timeouts(timeout, grace)


def test_lock_patterns_are_globs():
    annotations = {"eviction-lock.berth.io/a": "", "other/x": "", "l2-lock.maintenance.yaook"
                   ".cloud/b": ""}
    assert held_locks(annotations, ["eviction-lock.berth.io/*",
                                    "l2-lock.maintenance.yaook.cloud/*"]) == [
        "eviction-lock.berth.io/a", "l2-lock.maintenance.yaook.cloud/b"]
