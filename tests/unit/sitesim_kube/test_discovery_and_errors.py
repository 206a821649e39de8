"""Discovery documents, Status error bodies and the Table rendering kubectl asks for."""

from __future__ import annotations

import requests

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_version_is_served(server, api_client) -> None:
    import kubernetes
    info = kubernetes.client.VersionApi(api_client).get_code()
    assert (info.major, info.minor) == ("1", "32")


def test_core_v1_advertises_eviction_as_policy_v1(core) -> None:
    resources = {r.name: r for r in core.get_api_resources().resources}
    eviction = resources["pods/eviction"]
    assert (eviction.group, eviction.version, eviction.kind, eviction.verbs) == (
        "policy", "v1", "Eviction", ["create"])
    assert {"nodes", "pods", "namespaces"} <= set(resources)


def test_groups_are_listed(server) -> None:
    groups = requests.get(f"{server.url}/apis", timeout=10).json()["groups"]
    assert {g["preferredVersion"]["groupVersion"] for g in groups} == {
        "apps/v1", "policy/v1", "coordination.k8s.io/v1"}
    for gv in ("apps/v1", "policy/v1", "coordination.k8s.io/v1"):
        body = requests.get(f"{server.url}/apis/{gv}", timeout=10).json()
        assert body["kind"] == "APIResourceList" and body["groupVersion"] == gv


def test_missing_object_is_a_kubernetes_status(server) -> None:
    response = requests.get(f"{server.url}/api/v1/nodes/nope", timeout=10)
    assert response.status_code == 404
    assert response.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'nodes "nope" not found', "reason": "NotFound", "code": 404,
        "details": {"name": "nope", "kind": "nodes"}}


def test_unknown_route_method_and_body_errors(server) -> None:
    assert requests.get(f"{server.url}/api/v1/widgets", timeout=10).status_code == 404
    assert requests.post(f"{server.url}/api/v1/nodes/node01", json={},
                         timeout=10).status_code == 405
    bad = requests.post(f"{server.url}/api/v1/namespaces", data=b"{nope",
                        headers={"Content-Type": "application/json"}, timeout=10)
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"
    wrong_type = requests.patch(f"{server.url}/api/v1/nodes/node01", json={},
                                headers={"Content-Type": "application/json"}, timeout=10)
    assert wrong_type.status_code == 415


def test_invalid_pod_is_422_and_not_stored(server) -> None:
    response = requests.post(f"{server.url}/api/v1/namespaces/default/pods",
                             json={"metadata": {"name": "p"}, "spec": {}}, timeout=10)
    assert response.status_code == 422 and response.json()["reason"] == "Invalid"
    assert requests.get(f"{server.url}/api/v1/namespaces/default/pods/p",
                        timeout=10).status_code == 404


def test_nodes_as_table(cluster, server) -> None:
    cluster.api.patch(__import__("sitesim.kubeapi.resources", fromlist=["x"]).BY_GROUP_PLURAL[
        ("", "nodes")], None, "node04", {"spec": {"unschedulable": True}},
        "application/strategic-merge-patch+json")
    body = requests.get(f"{server.url}/api/v1/nodes", headers={"Accept": TABLE},
                        timeout=10).json()
    assert body["kind"] == "Table" and body["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in body["columnDefinitions"]]
    assert names[:5] == ["Name", "Status", "Roles", "Age", "Version"]
    rows = {r["cells"][0]: r["cells"] for r in body["rows"]}
    assert rows["node04"][1] == "Ready,SchedulingDisabled"
    assert rows["node01"][2] == "control-plane"
    assert rows["node01"][4] == "v1.32.4"
    assert body["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
