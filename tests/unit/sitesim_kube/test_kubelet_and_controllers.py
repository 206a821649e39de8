"""Simulated kubelet and controllers: DaemonSets, recreation, kubelet shutdown, node state."""

from __future__ import annotations

import kubernetes
import pytest

from sitesim.kubeapi import KubeCluster, KubeTimings, seed_workloads
from tests.unit.sitesim_kube.conftest import RecordingHooks, wait_for

DECOMMISSION = {"metadata": {"labels": {"promenade-decomission": "enabled"}}}


def _ready(core, node: str) -> str:  # noqa: ANN001
    return next(c.status for c in core.read_node(node).status.conditions if c.type == "Ready")


def _pods_of(core, prefix: str, node: str | None = None) -> list:  # noqa: ANN001
    selector = f"spec.nodeName={node}" if node else None
    return [p for p in core.list_pod_for_all_namespaces(field_selector=selector).items
            if p.metadata.name.startswith(prefix) and not p.metadata.deletion_timestamp]


def test_daemonset_runs_a_pod_on_every_node_including_new_ones(seeded, core, apps) -> None:
    assert {p.spec.node_name for p in _pods_of(core, "node-agent-")} == {
        f"node0{i}" for i in range(1, 7)}
    seeded.add_node("node07", {})
    wait_for(lambda: _pods_of(core, "node-agent-", "node07"))
    ds = apps.read_namespaced_daemon_set("node-agent", "kube-system")
    wait_for(lambda: apps.read_namespaced_daemon_set(
        "node-agent", "kube-system").status.number_ready == 7)
    assert ds.spec.selector.match_labels == {"application": "node-agent"}


def test_daemonset_owner_of_a_pod_can_be_read(seeded, core, apps) -> None:
    pod = _pods_of(core, "node-agent-", "node04")[0]
    owner = pod.metadata.owner_references[0]
    assert owner.kind == "DaemonSet"
    assert apps.read_namespaced_daemon_set(owner.name, pod.metadata.namespace).metadata.uid == \
        owner.uid


def test_mirror_pods_are_owned_by_their_node(seeded, core) -> None:
    pod = core.read_namespaced_pod("kube-apiserver-node01", "kube-system")
    assert "kubernetes.io/config.mirror" in pod.metadata.annotations
    assert pod.metadata.owner_references[0].kind == "Node"


def test_deployment_pods_are_spread_over_compute_nodes(seeded, core, apps) -> None:
    web = _pods_of(core, "web-")
    assert sorted(p.spec.node_name for p in web) == ["node04", "node05", "node06"]
    rs_name = web[0].metadata.owner_references[0].name
    rs = apps.read_namespaced_replica_set(rs_name, "demo")
    assert rs.metadata.owner_references[0].kind == "Deployment"
    wait_for(lambda: apps.read_namespaced_deployment("web", "demo").status.ready_replicas == 3)


def test_deleted_pod_is_recreated_on_another_schedulable_node(seeded, core) -> None:
    core.patch_node("node04", {"spec": {"unschedulable": True}})
    core.patch_node("node05", {"spec": {"unschedulable": True}})
    victim = _pods_of(core, "web-", "node04")[0].metadata.name
    core.delete_namespaced_pod(victim, "demo")
    wait_for(lambda: len(_pods_of(core, "web-", "node06")) == 2)
    assert not any(p.metadata.name == victim for p in _pods_of(core, "web-"))


def test_statefulset_recreates_the_same_ordinal(cluster, core, apps) -> None:
    labels = {"app": "db"}
    apps.create_namespaced_stateful_set("default", {
        "metadata": {"name": "db"}, "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                                             "serviceName": "db", "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "db"}]}}}})
    wait_for(lambda: len(_pods_of(core, "db-")) == 2)
    uid = core.read_namespaced_pod("db-1", "default").metadata.uid
    core.delete_namespaced_pod("db-1", "default")
    wait_for(lambda: any(p.metadata.name == "db-1" and p.metadata.uid != uid
                         for p in _pods_of(core, "db-")))


def test_decommission_label_shuts_the_kubelet_down(seeded, core) -> None:
    core.patch_node("node06", DECOMMISSION)
    wait_for(lambda: _pods_of(core, "kubelet-shutdown-", "node06"))
    wait_for(lambda: _ready(core, "node06") == "Unknown")
    assert seeded.node_summary("node06")["ready"] is False
    assert _ready(core, "node05") == "True"


def test_kubelet_shutdown_can_be_disabled_per_node(seeded, core) -> None:
    seeded.set_kubelet_shutdown_enabled("node06", False)
    core.patch_node("node06", DECOMMISSION)
    core.patch_node("node05", DECOMMISSION)
    wait_for(lambda: _ready(core, "node05") == "Unknown")
    assert _pods_of(core, "kubelet-shutdown-", "node06")
    assert _ready(core, "node06") == "True"


def test_kubelet_shutdown_fault_keeps_the_node_ready(seeded, hooks, core) -> None:
    hooks.faults[("kube.kubelet_shutdown", "node06")] = "fail"
    core.patch_node("node06", DECOMMISSION)
    core.patch_node("node05", DECOMMISSION)
    wait_for(lambda: _ready(core, "node05") == "Unknown")
    assert _ready(core, "node06") == "True"


def test_set_ready_and_remove_node_show_in_summary(cluster) -> None:
    cluster.set_ready("node04", False)
    assert cluster.node_summary("node04")["ready"] is False
    cluster.set_ready("node04", True)
    assert cluster.node_summary("node04") == {
        "present": True, "ready": True, "unschedulable": False,
        "labels": cluster.node_summary("node04")["labels"]}
    cluster.remove_node("node04")
    assert cluster.node_summary("node04")["present"] is False


def test_pods_of_a_deleted_node_are_garbage_collected(seeded, core) -> None:
    core.delete_node("node04")
    wait_for(lambda: not core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=node04").items)
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.read_node("node04")
    assert err.value.status == 404


def test_label_callback_sees_label_changes(cluster, core) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    cluster.on_node_labels(lambda name, labels: seen.append((name, labels)))
    core.patch_node("node01", {"metadata": {"labels": {"kubernetes-etcd": None}}})
    wait_for(lambda: seen)
    core.patch_node("node01", {"metadata": {"labels": {"kubernetes-etcd": "enabled"}}})
    wait_for(lambda: len(seen) == 2)
    etcd = [labels.get("kubernetes-etcd") for name, labels in seen if name == "node01"]
    assert etcd == [None, "enabled"]


def test_readded_node_fires_the_label_callback(cluster) -> None:
    seen: list[str] = []
    cluster.on_node_labels(lambda name, labels: seen.append(labels.get("kubernetes-etcd", "")))
    cluster.remove_node("node02")
    cluster.add_node("node02", {"kubernetes-etcd": "enabled"}, control_plane=True)
    wait_for(lambda: seen == ["enabled"])


def test_label_callbacks_run_without_the_cluster_lock(cluster, core) -> None:
    import threading
    lock_free: list[bool] = []

    def callback(name: str, labels: dict[str, str]) -> None:
        # another thread must be able to use the cluster while the callback runs
        result: list[object] = []
        worker = threading.Thread(target=lambda: result.append(cluster.node_summary(name)))
        worker.start()
        worker.join(timeout=5)
        lock_free.append(bool(result))
    cluster.on_node_labels(callback)
    core.patch_node("node03", {"metadata": {"labels": {"x": "y"}}})
    wait_for(lambda: lock_free)
    assert lock_free == [True]


def test_apply_creates_then_replaces(cluster) -> None:
    manifest = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l", "namespace": "fresh"}, "spec": {"holderIdentity": "a"}}
    first = cluster.apply(manifest)
    manifest["spec"]["holderIdentity"] = "b"
    second = cluster.apply(manifest)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["spec"]["holderIdentity"] == "b"


def test_without_controllers_pods_stay_terminating() -> None:
    cluster = KubeCluster(RecordingHooks(), KubeTimings())
    cluster.add_node("n1", {})
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})
    from sitesim.kubeapi.resources import BY_GROUP_PLURAL
    pods = BY_GROUP_PLURAL[("", "pods")]
    cluster.api.delete(pods, "default", "p")
    assert cluster.api.get(pods, "default", "p")["metadata"]["deletionTimestamp"]


OUT_OF_SERVICE = {"spec": {"taints": [{"key": "node.kubernetes.io/out-of-service",
                                       "value": "nodeshutdown", "effect": "NoExecute"}]}}


def test_pods_of_a_dead_node_stay_terminating_until_it_is_tainted_out_of_service(
        seeded, core) -> None:
    victim = _pods_of(core, "web-", "node04")[0].metadata.name
    seeded.set_ready("node04", False)  # the kubelet is gone: nobody confirms a termination
    wait_for(lambda: _ready(core, "node04") == "Unknown")
    core.delete_namespaced_pod(victim, "demo")
    for _ in range(10):  # the pod GC leaves it alone while the node has no taint
        assert core.read_namespaced_pod(victim, "demo").metadata.deletion_timestamp
    core.patch_node("node04", OUT_OF_SERVICE)
    wait_for(lambda: not any(p.metadata.name == victim
                             for p in core.list_namespaced_pod("demo").items))
    left = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node04").items
    # Only pods tolerating every taint stay bound; the rest were deleted by the control plane.
    assert left and all(any(t.operator == "Exists" and not t.key
                            for t in p.spec.tolerations or []) for p in left)
    wait_for(lambda: len(_pods_of(core, "web-")) == 3)  # rescheduled on the other nodes
    assert not _pods_of(core, "web-", "node04")


def test_out_of_service_taint_on_a_ready_node_lets_its_kubelet_finish_terminations(
        seeded, core) -> None:
    core.patch_node("node05", {"spec": {"unschedulable": True}})
    core.patch_node("node05", OUT_OF_SERVICE)
    wait_for(lambda: not _pods_of(core, "web-", "node05")
             and not [p for p in core.list_namespaced_pod("demo").items
                      if p.spec.node_name == "node05"])


def test_a_generated_pod_name_already_taken_is_drawn_again(
        cluster: KubeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools

    from sitesim.kubeapi import workloads
    from sitesim.kubeapi.api import ListQuery
    from sitesim.kubeapi.resources import BY_GROUP_PLURAL
    from tests.unit.sitesim_kube.conftest import COMPUTE, CONTROL

    counter = itertools.count()
    monkeypatch.setattr(workloads, "random_suffix", lambda: f"{next(counter) // 2:05d}")
    seed_workloads(cluster, CONTROL, COMPUTE)  # every other suffix collides with the last

    def agents() -> set[str]:
        items = cluster.api.list(BY_GROUP_PLURAL[("", "pods")], None, ListQuery())["items"]
        return {p["spec"].get("nodeName") for p in items
                if p["metadata"]["name"].startswith("node-agent-")}

    wait_for(lambda: agents() == set(CONTROL + COMPUTE))
