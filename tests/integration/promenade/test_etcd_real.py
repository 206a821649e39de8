"""remove-etcd and health statuses on real 3-member etcd clusters and the real control plane."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests

from sitesim.etcd.cluster import EtcdCluster

from .conftest import Api, KubeSite, etcd_design, wait_for

pytestmark = pytest.mark.slow


def members(cluster: EtcdCluster) -> list[str]:
    return sorted(m.get("name", "") for m in cluster.member_list())


def healthy(cluster: EtcdCluster, name: str) -> bool:
    try:
        reply = requests.get(f"{cluster.members[name].client_url}/health", timeout=2)
        return reply.json().get("health") == "true"
    except requests.RequestException:
        return False


def leader_name(cluster: EtcdCluster) -> str:
    for name in members(cluster):
        try:
            reply = requests.post(f"{cluster.members[name].client_url}/v3/maintenance/status",
                                  json={}, timeout=2).json()
        except requests.RequestException:
            continue
        by_id = {str(m["ID"]): m["name"] for m in cluster.member_list()}
        return by_id[str(reply["leader"])]
    raise AssertionError("no member answered")


def test_removing_one_member_keeps_the_cluster_healthy(api: Api, etcd_cluster, tmp_path):
    ref = {"rel": "design", "href": etcd_design(tmp_path, etcd_cluster),
           "type": "application/x-yaml"}
    result = api.post("/nodes/node01/remove-etcd", json=ref, params={"timeout": "30"})
    assert result.status_code == 200, result.json
    assert members(etcd_cluster) == ["node02", "node03"]
    assert healthy(etcd_cluster, "node02") and healthy(etcd_cluster, "node03")
    body = api.get("/etcd-cluster-health-statuses", params={"design_ref": ref["href"]}).json
    assert [(m["name"], m["message"]) for m in body["details"]["messageList"]] == [
        ("kubernetes/node02", "Healthy"), ("kubernetes/node03", "Healthy")]


def test_the_leader_is_removed_after_handing_over(api: Api, etcd_cluster, tmp_path):
    leader = leader_name(etcd_cluster)
    href = etcd_design(tmp_path, etcd_cluster)
    result = api.post(f"/nodes/{leader}/remove-etcd", json=href)
    assert result.status_code == 200, result.json
    assert leader not in members(etcd_cluster) and len(members(etcd_cluster)) == 2
    assert leader_name(etcd_cluster) != leader


def test_a_second_removal_below_the_threshold_is_refused(api: Api, etcd_cluster, tmp_path):
    href = etcd_design(tmp_path, etcd_cluster, threshold=2)
    assert api.post("/nodes/node01/remove-etcd", json=href).status_code == 200
    result = api.post("/nodes/node02/remove-etcd", json=href)
    assert result.status_code == 500 and result.json["reason"] == "RemoveEtcdError"
    assert "minimum_healthy_members" in str(result.json)
    assert members(etcd_cluster) == ["node02", "node03"]
    assert healthy(etcd_cluster, "node02") and healthy(etcd_cluster, "node03")


def test_with_one_member_stopped_removing_a_healthy_one_is_refused(api, etcd_cluster, tmp_path):
    href = etcd_design(tmp_path, etcd_cluster, threshold=0)
    etcd_cluster.stop_member("node03")
    result = api.post("/nodes/node01/remove-etcd", json=href)
    assert result.status_code == 500 and result.json["reason"] == "RemoveEtcdError"
    assert "quorum" in str(result.json)
    assert members(etcd_cluster) == ["node01", "node02", "node03"]


def test_health_statuses_with_one_member_down(api: Api, etcd_cluster, tmp_path):
    href = etcd_design(tmp_path, etcd_cluster)
    etcd_cluster.stop_member("node02")
    wait_for(lambda: healthy(etcd_cluster, "node01") and healthy(etcd_cluster, "node03"))
    body = api.get("/etcd-cluster-health-statuses", params={"design_ref": href}).json
    assert body["code"] == 200
    assert [(m["name"], m["message"], m["error"]) for m in body["details"]["messageList"]] == [
        ("kubernetes/node01", "Healthy", False),
        ("kubernetes/node02", "Unable to access Etcd", True),
        ("kubernetes/node03", "Healthy", False)]


def test_health_statuses_of_a_dead_cluster_is_etcd_not_accessible(api, etcd_cluster, tmp_path):
    href = etcd_design(tmp_path, etcd_cluster)
    etcd_cluster.stop()
    result = api.get("/etcd-cluster-health-statuses", params={"design_ref": href})
    assert result.status_code == 500 and result.json["reason"] == "EtcdNotAccessible"


def test_two_concurrent_decommissions_remove_exactly_one_member(api: Api, kube_site: KubeSite,
                                                                 etcd_cluster, tmp_path):
    ref = {"rel": "design", "href": etcd_design(tmp_path, etcd_cluster, threshold=2),
           "type": "application/x-yaml"}
    results: dict[str, Any] = {}

    def decommission(node: str) -> None:
        results[node] = api.post(f"/nodes/{node}/decommission", json=ref,
                                 params={"drain-node-timeout": "30",
                                         "drain-node-grace-period": "1",
                                         "etcd-ready-timeout": "20"})

    threads = [threading.Thread(target=decommission, args=(n,)) for n in ("node01", "node02")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200, 500], {n: r.json for n, r in results.items()}
    failed = next(r.json for r in results.values() if r.status_code == 500)
    assert failed["reason"] == "DisassociateStepFailure"
    assert failed["details"]["failed_step"] == "remove-etcd"
    assert len(members(etcd_cluster)) == 2
    wait_for(lambda: all(healthy(etcd_cluster, m) for m in members(etcd_cluster)))
