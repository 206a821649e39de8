"""Real etcd clusters (stop, remove, re-add) and the admin API's observation and faults."""

from __future__ import annotations

import requests

from sitesim.etcd.cluster import EtcdCluster
from tests.integration.sitesim.conftest import calls, node, wait_for


def remove_member(url, member_id):
    """etcd refuses removals for ~5 s after a cluster starts (it must have held quorum)."""
    wait_for(lambda: requests.post(url + "/v3/cluster/member/remove", json={"ID": member_id},
                                   timeout=10).ok, timeout=30, interval=0.5)


def test_three_member_cluster_is_healthy_and_a_stopped_member_is_down(tmp_path):
    cluster = EtcdCluster("test", ["m1", "m2", "m3"], tmp_path)
    try:
        cluster.start()
        assert all(cluster.healthy(m) for m in ("m1", "m2", "m3"))
        assert sorted(cluster.member_names()) == ["m1", "m2", "m3"]
        cluster.stop_member("m2")
        assert not cluster.healthy("m2")
        assert cluster.healthy("m1")
        cluster.restart_member("m2")
        assert cluster.healthy("m2")
    finally:
        cluster.stop()
    assert cluster.pids() == []


def test_removed_member_is_added_back(tmp_path):
    cluster = EtcdCluster("test", ["m1", "m2", "m3"], tmp_path)
    try:
        cluster.start()
        member = next(m for m in cluster.member_list() if m["name"] == "m3")
        remove_member(cluster.members["m1"].client_url, member["ID"])
        assert sorted(cluster.member_names()) == ["m1", "m2"]
        cluster.readd_member("m3")
        wait_for(lambda: sorted(cluster.member_names()) == ["m1", "m2", "m3"])
        assert cluster.healthy("m3")
    finally:
        cluster.stop()


def test_site_readds_a_removed_member_when_the_etcd_label_returns(sitesim_site):
    cluster = sitesim_site.etcd.clusters["kubernetes"]
    member = next(m for m in cluster.member_list() if m["name"] == "node02")
    remove_member(cluster.members["node01"].client_url, member["ID"])
    wait_for(lambda: node(sitesim_site, "node02")["etcd"] == [])
    api = sitesim_site.kube.api  # as `kubectl label node node02 kubernetes-etcd-`, then back
    api.patch("/api/v1/nodes/node02", {"metadata": {"labels": {"kubernetes-etcd": None}}})
    api.patch("/api/v1/nodes/node02", {"metadata": {"labels": {"kubernetes-etcd": "enabled"}}})
    wait_for(lambda: node(sitesim_site, "node02")["etcd"] ==
             [{"cluster": "kubernetes", "member": "node02"}], timeout=60)
    wait_for(lambda: cluster.healthy("node02"), timeout=30)
    assert calls(sitesim_site, system="etcd", op="member_add", node="node02") == 1


def test_member_down_fault_stops_the_member_until_cleared(sitesim_site):
    admin = sitesim_site.urls["sitesim"]
    cluster = sitesim_site.etcd.clusters["kubernetes"]
    reply = requests.post(admin + "/faults", timeout=10, json={
        "node": "node01", "operation": "etcd.member_down", "effect": "fail"})
    assert reply.status_code == 201
    wait_for(lambda: not cluster.healthy("node01"))
    assert requests.delete(admin + "/faults", timeout=10).status_code == 204
    wait_for(lambda: cluster.healthy("node01"), timeout=30)


def test_nodes_view_has_the_contract_fields(sitesim_site):
    nodes = requests.get(sitesim_site.urls["sitesim"] + "/nodes", timeout=10).json()
    assert [n["name"] for n in nodes] == [f"node0{i}" for i in range(1, 7)]
    one = node(sitesim_site, "node03")
    assert set(one) >= {"name", "power", "maas_status", "disks", "kubernetes", "etcd", "bmc"}
    assert set(one["kubernetes"]) >= {"present", "ready", "unschedulable", "labels"}
    assert one["bmc"]["type"] == "ipmi"


def test_unknown_node_is_404_with_a_status_body(sitesim_site):
    reply = requests.get(sitesim_site.urls["sitesim"] + "/nodes/nosuch", timeout=10)
    assert reply.status_code == 404
    assert reply.json()["kind"] == "Status" and reply.json()["code"] == 404


def test_bad_fault_lists_every_problem_and_adds_nothing(sitesim_site):
    admin = sitesim_site.urls["sitesim"]
    reply = requests.post(admin + "/faults", timeout=10, json={
        "node": "nosuch", "operation": "maas.explode", "effect": "later"})
    assert reply.status_code == 400
    assert reply.json()["details"]["errorCount"] == 3
    assert requests.get(admin + "/faults", timeout=10).json() == []
    assert requests.post(admin + "/faults", data="{", timeout=10,
                         headers={"Content-Type": "application/json"}).status_code == 400
    assert requests.post(admin + "/faults", data="x", timeout=10,
                         headers={"Content-Type": "text/plain"}).status_code == 415


def test_call_counts_query_is_validated(sitesim_site):
    admin = sitesim_site.urls["sitesim"]
    assert requests.get(admin + "/calls", params={"system": "maas"},
                        timeout=10).json()["count"] >= 0
    reply = requests.get(admin + "/calls", params={"system": "x", "node": "y"}, timeout=10)
    assert reply.status_code == 400
    assert reply.json()["details"]["errorCount"] == 2
