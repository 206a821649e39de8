"""Watch on nodes and pods: ADDED, MODIFIED, DELETED, from a resourceVersion, with a timeout."""

from __future__ import annotations

import threading

import kubernetes
import requests


def _collect(func, stop_after: int, **kwargs) -> list[tuple[str, str]]:  # noqa: ANN001
    events: list[tuple[str, str]] = []
    watcher = kubernetes.watch.Watch()
    for event in watcher.stream(func, **kwargs):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) >= stop_after:
            watcher.stop()
    return events


def test_watch_pods_reports_added_modified_deleted(cluster, core) -> None:
    start = core.list_namespaced_pod("default").metadata.resource_version
    result: list[tuple[str, str]] = []
    thread = threading.Thread(target=lambda: result.extend(_collect(
        core.list_namespaced_pod, 3, namespace="default", resource_version=start,
        timeout_seconds=20)))
    thread.start()
    core.create_namespaced_pod("default", {"metadata": {"name": "w"}, "spec": {
        "nodeName": "node04", "containers": [{"name": "c"}]}})
    core.patch_namespaced_pod("w", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("w", "default", grace_period_seconds=0)
    thread.join(timeout=20)
    assert result == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_resource_version_starts_with_current_objects(cluster, core) -> None:
    events = _collect(core.list_node, 6, timeout_seconds=10)
    assert events == [("ADDED", f"node0{i}") for i in range(1, 7)]


def test_watch_nodes_filtered_by_selector_sees_cordon(cluster, core) -> None:
    start = core.list_node().metadata.resource_version
    result: list[tuple[str, str]] = []
    thread = threading.Thread(target=lambda: result.extend(_collect(
        core.list_node, 1, resource_version=start, field_selector="metadata.name=node05",
        timeout_seconds=20)))
    thread.start()
    core.patch_node("node04", {"spec": {"unschedulable": True}})
    core.patch_node("node05", {"spec": {"unschedulable": True}})
    thread.join(timeout=20)
    assert result == [("MODIFIED", "node05")]


def test_watch_ends_at_its_timeout(cluster, server) -> None:
    response = requests.get(f"{server.url}/api/v1/nodes",
                            params={"watch": "true", "resourceVersion": "1",
                                    "timeoutSeconds": "1"}, stream=True, timeout=30)
    lines = [line for line in response.iter_lines() if line]
    assert response.status_code == 200
    assert all(b'"type": ' in line for line in lines)


def test_watch_from_an_expired_resource_version_is_gone() -> None:
    from sitesim.kubeapi import KubeCluster, serve
    from tests.unit.sitesim_kube.conftest import RecordingHooks, fast_timings

    cluster = KubeCluster(RecordingHooks(), fast_timings(), watch_history=10)
    for i in range(20):
        cluster.add_node(f"n{i}", {})
    server = serve(cluster)
    try:
        response = requests.get(f"{server.url}/api/v1/pods",
                                params={"watch": "true", "resourceVersion": "2"}, timeout=30)
        assert response.status_code == 410
        assert response.json()["reason"] == "Expired"
    finally:
        server.shutdown()


def test_watch_asked_as_table_sends_table_rows(cluster, server) -> None:
    import json
    response = requests.get(
        f"{server.url}/api/v1/nodes", params={"watch": "true", "timeoutSeconds": "1"},
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
        stream=True, timeout=30)
    events = [json.loads(line) for line in response.iter_lines() if line]
    assert [e["object"]["kind"] for e in events] == ["Table"] * 6
    assert events[0]["object"]["columnDefinitions"][0]["name"] == "Name"
    assert events[1]["object"]["columnDefinitions"] == []
    assert events[5]["object"]["rows"][0]["cells"][0] == "node06"
