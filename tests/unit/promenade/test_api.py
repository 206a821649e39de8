"""Promenade over HTTP (in-process): codes, reasons and status bodies of every endpoint."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promenade_api.kube.model import EvictResult

from .conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"


def status(result, code, reason=None):
    body = result.json
    assert result.status_code == code, body
    assert body["kind"] == "Status" and body["code"] == code
    if reason:
        assert body["reason"] == reason
    return body


@pytest.fixture
def ref(design):
    return {"rel": "design", "href": design(etcd_doc([kubernetes_cluster(2)])),
            "type": "application/x-yaml"}


@pytest.mark.parametrize("path", ["drain", "clear-labels", "shutdown-kubelet",
                                  "remove-from-cluster"])
def test_unknown_node_is_404_not_found(api, path):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/ghost/{path}", headers=h), 404, "NotFound")


def test_unknown_node_with_a_design_is_404(api, ref):
    client, h = api
    for path in ("decommission", "remove-etcd"):
        status(client.simulate_post(f"{P}/nodes/ghost/{path}", json=ref, headers=h), 404,
               "NotFound")


def test_get_unknown_node_is_404(api):
    client, h = api
    status(client.simulate_get(f"{P}/nodes/ghost", headers=h), 404, "NotFound")


@pytest.mark.parametrize("query", ["timeout=abc", "timeout=1.5", "grace-period=-1",
                                   "timeout=10&grace-period=10", "grace-period=4000",
                                   "timeout=0", "bogus=1"])
def test_drain_bad_parameters_are_400_and_change_nothing(api, kube, query):
    client, h = api
    body = status(client.simulate_post(f"{P}/nodes/node04/drain", query_string=query,
                                       headers=h), 400, "BadRequest")
    assert body["details"]["errorCount"] >= 1
    assert not kube.nodes["node04"].unschedulable


def test_drain_lists_every_bad_parameter(api):
    client, h = api
    body = status(client.simulate_post(f"{P}/nodes/node04/drain",
                                       query_string="timeout=x&grace-period=y", headers=h), 400)
    assert body["details"]["errorCount"] == 2


def test_drain_success_lists_evicted_and_skipped_pods(api, kube):
    client, h = api
    kube.add_pod("web", "node04")
    kube.add_pod("ds-pod", "node04", namespace="kube-system", owner=("DaemonSet", "ds"))
    body = status(client.simulate_post(f"{P}/nodes/node04/drain", query_string="timeout=60&"
                                       "grace-period=5", headers=h), 200, "Success")
    assert body["details"]["evicted"] == ["default/web"]
    assert body["details"]["skipped"][0]["pod"] == "kube-system/ds-pod"


def test_drain_failure_is_500_drain_node_error(api, kube):
    client, h = api
    kube.add_pod("db", "node04")
    kube.evict_script["db"] = [EvictResult("retry", "disruption budget")] * 100
    body = status(client.simulate_post(f"{P}/nodes/node04/drain",
                                       query_string="timeout=20&grace-period=1", headers=h),
                  500, "DrainNodeError")
    assert body["details"]["remaining_pods"] == ["default/db"]


def test_clear_labels_bad_timeout_is_400(api):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node04/clear-labels", query_string="timeout=-3",
                                headers=h), 400)


def test_clear_labels_success(api, kube):
    client, h = api
    body = status(client.simulate_post(f"{P}/nodes/node04/clear-labels", headers=h), 200)
    assert body["details"]["removed_labels"] == ["openstack-compute-node"]


def test_remove_etcd_without_a_design_ref_is_400_missing_design_ref(api):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", headers=h), 400,
           "MissingDesignRef")
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", json={"rel": "design"},
                                headers=h), 400, "MissingDesignRef")


def test_remove_etcd_accepts_a_bare_href(api, ref, etcd):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", json=ref["href"], headers=h),
           200)
    assert etcd.removed == ["node01"]


def test_remove_etcd_refusal_is_500_remove_etcd_error(api, ref, etcd):
    client, h = api
    etcd.down.add("node03")
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", json=ref, headers=h), 500,
           "RemoveEtcdError")
    assert etcd.removed == []


def test_remove_etcd_of_a_wrong_content_type_is_415(api, ref):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", body="<x/>",
                                headers={**h, "Content-Type": "application/xml"}), 415)


def test_remove_etcd_accepts_a_text_plain_href(api, ref, etcd):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", body=ref["href"],
                                headers={**h, "Content-Type": "text/plain"}), 200)
    assert etcd.removed == ["node01"]


def test_an_unsupported_design_ref_scheme_is_400(api):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", json="ftp://x/design",
                                headers=h), 400)


def test_health_statuses(api, ref, etcd):
    client, h = api
    etcd.down.add("node02")
    body = status(client.simulate_get(f"{P}/etcd-cluster-health-statuses",
                                      params={"design_ref": ref["href"]}, headers=h), 200)
    assert [m["message"] for m in body["details"]["messageList"]] == [
        "Healthy", "Unable to access Etcd", "Healthy"]
    assert body["details"]["errorCount"] == 1


def test_health_statuses_without_design_ref_is_400_missing_design_ref(api):
    client, h = api
    status(client.simulate_get(f"{P}/etcd-cluster-health-statuses", headers=h), 400,
           "MissingDesignRef")


def test_health_statuses_without_etcd_document_is_404(api, design):
    client, h = api
    href = design({"schema": "drydock/Region/v1", "metadata": {"name": "r"}, "data": {}},
                  name="other.yaml")
    status(client.simulate_get(f"{P}/etcd-cluster-health-statuses",
                               params={"design_ref": href}, headers=h), 404, "NotFound")


def test_health_statuses_of_an_unreachable_site_is_500_etcd_not_accessible(api, ref, etcd):
    client, h = api
    etcd.unreachable_clusters.add("kubernetes")
    status(client.simulate_get(f"{P}/etcd-cluster-health-statuses",
                               params={"design_ref": ref["href"]}, headers=h), 500,
           "EtcdNotAccessible")


def test_shutdown_kubelet_timeout_is_500(api):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node04/shutdown-kubelet", query_string="timeout=3",
                                headers=h), 500, "ShutdownKubeletError")


def test_shutdown_kubelet_success(api, kube, clock):
    client, h = api
    clock.at(2, lambda: kube.nodes.__setitem__("node04", replace(kube.nodes["node04"],
                                                                 ready="Unknown")))
    status(client.simulate_post(f"{P}/nodes/node04/shutdown-kubelet", headers=h), 200)


def test_remove_from_cluster_of_an_undrained_node_is_409(api, kube):
    client, h = api
    body = status(client.simulate_post(f"{P}/nodes/node04/remove-from-cluster", headers=h),
                  409, "Conflict")
    assert body["details"]["errorCount"] == 2
    assert "node04" in kube.nodes


def test_remove_from_cluster_success(api, kube):
    client, h = api
    kube.patch_node("node04", labels={"openstack-compute-node": None}, unschedulable=True)
    status(client.simulate_post(f"{P}/nodes/node04/remove-from-cluster", headers=h), 200)
    assert "node04" not in kube.nodes


def test_decommission_bad_parameters_are_400(api, ref):
    client, h = api
    body = status(client.simulate_post(
        f"{P}/nodes/node01/decommission", json=ref, headers=h,
        query_string="drain-node-timeout=10&drain-node-grace-period=20&etcd-ready-timeout=x"),
        400)
    assert body["details"]["errorCount"] == 2


def test_decommission_without_design_is_400_missing_design_ref(api):
    client, h = api
    status(client.simulate_post(f"{P}/nodes/node01/decommission", headers=h), 400,
           "MissingDesignRef")


def test_decommission_step_failure_is_500_disassociate_step_failure(api, ref, etcd):
    client, h = api
    etcd.down.add("node03")
    body = status(client.simulate_post(f"{P}/nodes/node01/decommission", json=ref, headers=h),
                  500, "DisassociateStepFailure")
    assert body["details"]["failed_step"] == "remove-etcd"


def test_decommission_success(api, ref, etcd, kube, clock):
    client, h = api
    clock.at(2, lambda: kube.nodes.__setitem__("node01", replace(kube.nodes["node01"],
                                                                 ready="Unknown")))
    body = status(client.simulate_post(f"{P}/nodes/node01/decommission", json=ref, headers=h,
                                       query_string="etcd-ready-timeout=30"), 200, "Success")
    assert body["details"]["errorCount"] == 0 and etcd.removed == ["node01"]


def test_put_node_labels(api, kube):
    client, h = api
    status(client.simulate_put(f"{P}/node-labels/node04", json={"a": "b"}, headers=h), 200)
    assert kube.nodes["node04"].labels == {"kubernetes.io/hostname": "node04", "a": "b"}


def test_put_node_labels_invalid_is_400_and_changes_nothing(api, kube):
    client, h = api
    before = dict(kube.nodes["node04"].labels)
    status(client.simulate_put(f"{P}/node-labels/node04", json={"a b": 1}, headers=h), 400)
    status(client.simulate_put(f"{P}/node-labels/node04", headers=h), 400)
    assert kube.nodes["node04"].labels == before


def test_put_node_labels_of_an_unknown_node_is_404(api):
    client, h = api
    status(client.simulate_put(f"{P}/node-labels/ghost", json={"a": "b"}, headers=h), 404)


def test_node_view(api, kube, ref):
    client, h = api
    kube.add_pod("web", "node01")
    kube.add_pod("ds-pod", "node01", owner=("DaemonSet", "ds"))
    kube.patch_node("node01", annotations={"eviction-lock.berth.io/x": ""})
    result = client.simulate_get(f"{P}/nodes/node01", params={"design_ref": ref["href"]},
                                 headers=h)
    assert result.status_code == 200
    view = result.json
    assert view["pods"]["by_owner_kind"] == {"ReplicaSet": ["default/web"],
                                             "DaemonSet": ["default/ds-pod"]}
    assert view["eviction_locks"] == ["eviction-lock.berth.io/x"]
    assert view["etcd"] == [{"cluster": "kubernetes", "member": "node01"}]
    assert view["cordoned"] is False


def test_validatedesign_valid(api, ref):
    client, h = api
    status(client.simulate_post(f"{P}/validatedesign", json=ref, headers=h), 200, "Validation")
    status(client.simulate_post(f"{P}/validatedesign", json={"href": ref["href"]}, headers=h),
           200)


def test_validatedesign_invalid_lists_validation_messages(api, design):
    client, h = api
    href = design(etcd_doc([{"name": "x", "client_endpoints": [], "members": []}]),
                  name="bad.yaml")
    body = status(client.simulate_post(f"{P}/validatedesign", json={"href": href}, headers=h),
                  400, "Validation")
    assert all(m["kind"] == "ValidationMessage" for m in body["details"]["messageList"])


def test_validatedesign_without_ref_is_400(api):
    client, h = api
    status(client.simulate_post(f"{P}/validatedesign", json={}, headers=h), 400,
           "MissingDesignRef")


def test_kubernetes_down_is_a_failure_status(api, kube):
    client, h = api
    kube.down = True
    body = status(client.simulate_post(f"{P}/nodes/node04/drain", headers=h), 500,
                  "DrainNodeError")
    assert "unreachable" in body["details"]["messageList"][0]["message"]


@pytest.mark.parametrize("path,reason", [
    ("drain", "DrainNodeError"), ("clear-labels", "ClearLabelsError"),
    ("shutdown-kubelet", "ShutdownKubeletError"), ("remove-from-cluster", "DeleteNodeError")])
def test_kubernetes_failures_carry_the_step_reason(api, kube, path, reason):
    client, h = api
    kube.down = True
    status(client.simulate_post(f"{P}/nodes/node04/{path}", headers=h), 500, reason)


def test_kubernetes_down_while_taking_the_etcd_lease_is_remove_etcd_error(api, kube, ref, etcd):
    client, h = api
    kube.down = True
    status(client.simulate_post(f"{P}/nodes/node01/remove-etcd", json=ref, headers=h), 500,
           "RemoveEtcdError")
    assert etcd.removed == []
