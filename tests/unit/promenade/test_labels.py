"""Clear labels and PUT node-labels: what is kept, what is removed, waiting for pods to leave."""

from __future__ import annotations

import pytest

from common.errors import BadRequest
from promenade_api.errors import ClearLabelsError
from promenade_api.kube.labels import LabelManager, is_kubernetes_label, label_problems, pod_fits
from promenade_api.kube.model import Pod


def manager(kube, clock, keep=()):
    return LabelManager(kube, keep, clock=clock, sleep=clock.sleep, poll_interval=1.0)


def test_clear_labels_keeps_only_kubernetes_io_and_the_keep_list(kube, clock):
    kube.patch_node("node01", labels={"rack": "r1", "team.example.com/x": "y"})
    result = manager(kube, clock, keep=["rack"]).clear("node01", 60)
    assert kube.nodes["node01"].labels == {
        "kubernetes.io/hostname": "node01", "node-role.kubernetes.io/control-plane": "",
        "rack": "r1"}
    assert result["removed_labels"] == ["kubernetes-etcd", "team.example.com/x"]


def test_clear_labels_keeps_the_maintenance_label_lock_holders_watch(kube, clock):
    kube.patch_node("node01", labels={"maintenance.berth.io/required": "true",
                                      "maintenance.yaook.cloud/maintenance-required-l2-agent":
                                      "True"})
    result = manager(kube, clock, keep=["rack"]).clear("node01", 60)
    labels = kube.nodes["node01"].labels
    assert labels["maintenance.berth.io/required"] == "true"
    assert labels["maintenance.yaook.cloud/maintenance-required-l2-agent"] == "True"
    assert "maintenance.berth.io/required" not in result["removed_labels"]


def test_clear_labels_waits_for_pods_whose_selector_no_longer_matches(kube, clock):
    pod = kube.add_pod("etcd-agent", "node01", node_selector={"kubernetes-etcd": "enabled"})
    clock.at(3, lambda: kube.pods.pop(pod.uid))
    manager(kube, clock).clear("node01", 60)
    assert kube.pod_names("node01") == [] and clock.slept


def test_clear_labels_fails_with_the_pods_that_did_not_leave(kube, clock):
    kube.add_pod("etcd-agent", "node01", node_selector={"kubernetes-etcd": "enabled"})
    kube.add_pod("free", "node01")
    with pytest.raises(ClearLabelsError) as err:
        manager(kube, clock).clear("node01", 5)
    assert err.value.to_status()["reason"] == "ClearLabelsError"
    assert err.value.details["remaining_pods"] == ["default/etcd-agent"]


def test_pod_fits_checks_required_node_affinity():
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                                 {"key": "gpu", "operator": "DoesNotExist"}]}
    pod = Pod("ns", "p", "u", node_affinity_terms=(term,))
    assert pod_fits(pod, {"zone": "a"})
    assert not pod_fits(pod, {"zone": "b"})
    assert not pod_fits(pod, {"zone": "a", "gpu": "1"})


@pytest.mark.parametrize("key,expected", [
    ("kubernetes.io/hostname", True), ("node-role.kubernetes.io/worker", True),
    ("topology.kubernetes.io/zone", True), ("kubernetes-etcd", False),
    ("maintenance.berth.io/required", False)])
def test_kubernetes_io_labels(key, expected):
    assert is_kubernetes_label(key) is expected


def test_put_labels_sets_exactly_the_given_labels_and_keeps_kubernetes_io(kube, clock):
    result = manager(kube, clock).replace("node04", {"role": "compute", "rack": "r2"})
    assert kube.nodes["node04"].labels == {"kubernetes.io/hostname": "node04",
                                           "role": "compute", "rack": "r2"}
    assert result["removed"] == ["openstack-compute-node"]
    assert result["added"] == ["rack", "role"]


def test_put_labels_rejects_every_invalid_label_and_changes_nothing(kube, clock):
    before = dict(kube.nodes["node04"].labels)
    with pytest.raises(BadRequest) as err:
        manager(kube, clock).replace("node04", {"bad key!": "x", "ok": 5, "v": "no spaces"})
    assert len(err.value.messages) == 3
    assert kube.nodes["node04"].labels == before


def test_label_problems_requires_an_object():
    assert label_problems(["a"]) and not label_problems({"a.b/c": "d"})
