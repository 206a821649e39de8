"""Patch types: JSON patch, merge patch and strategic merge patch, directly and over HTTP."""

from __future__ import annotations

import kubernetes
import pytest

from sitesim.kubeapi.errors import KubeInvalid
from sitesim.kubeapi.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    apply_patch,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

NODE = {"metadata": {"name": "n", "labels": {"a": "1", "b": "2"}},
        "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "DiskPressure", "status": "False"}]}}


def test_merge_patch_null_removes_and_objects_merge() -> None:
    result = merge_patch(NODE, {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert result["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert NODE["metadata"]["labels"] == {"a": "1", "b": "2"}


def test_merge_patch_replaces_lists_whole() -> None:
    result = merge_patch(NODE, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "False"}]


def test_strategic_patch_merges_conditions_by_type() -> None:
    result = strategic_merge_patch(
        NODE, {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}, "")
    assert {c["type"]: c["status"] for c in result["status"]["conditions"]} == {
        "Ready": "Unknown", "DiskPressure": "False"}


def test_strategic_patch_delete_directive_removes_list_item() -> None:
    patch = {"spec": {"taints": [{"key": "x", "$patch": "delete"}]}}
    assert strategic_merge_patch(NODE, patch, "")["spec"]["taints"] == []


def test_strategic_patch_null_uncordons() -> None:
    cordoned = strategic_merge_patch(NODE, {"spec": {"unschedulable": True}}, "")
    assert cordoned["spec"]["unschedulable"] is True
    assert "unschedulable" not in strategic_merge_patch(cordoned, {"spec": {"unschedulable": None}},
                                                        "")["spec"]


@pytest.mark.parametrize(("ops", "expected"), [
    ([{"op": "add", "path": "/metadata/labels/c", "value": "3"}], {"a": "1", "b": "2", "c": "3"}),
    ([{"op": "remove", "path": "/metadata/labels/a"}], {"b": "2"}),
    ([{"op": "replace", "path": "/metadata/labels/b", "value": "9"}], {"a": "1", "b": "9"}),
    ([{"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/z"}],
     {"b": "2", "z": "1"}),
    ([{"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/z"}],
     {"a": "1", "b": "2", "z": "1"}),
    ([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
      {"op": "add", "path": "/metadata/labels/d~1e", "value": "4"}],
     {"a": "1", "b": "2", "d/e": "4"}),
])
def test_json_patch_operations(ops: list[dict[str, object]], expected: dict[str, str]) -> None:
    assert json_patch(NODE, ops)["metadata"]["labels"] == expected


def test_json_patch_failed_test_or_missing_path_is_invalid() -> None:
    with pytest.raises(KubeInvalid):
        json_patch(NODE, [{"op": "test", "path": "/metadata/labels/a", "value": "2"}])
    with pytest.raises(KubeInvalid):
        json_patch(NODE, [{"op": "remove", "path": "/metadata/nothing"}])


def test_json_patch_appends_to_list_with_dash() -> None:
    result = apply_patch(NODE, [{"op": "add", "path": "/spec/taints/-",
                                 "value": {"key": "y", "effect": "NoExecute"}}], JSON_PATCH)
    assert [t["key"] for t in result["spec"]["taints"]] == ["x", "y"]


def test_apply_patch_dispatches_on_content_type() -> None:
    body = {"metadata": {"labels": {"a": None}}}
    assert apply_patch(NODE, body, MERGE_PATCH + "; charset=utf-8")["metadata"]["labels"] == {
        "b": "2"}
    assert apply_patch(NODE, body, STRATEGIC_PATCH)["metadata"]["labels"] == {"b": "2"}


def test_client_cordons_with_strategic_merge_patch(cluster, core) -> None:
    node = core.patch_node("node04", {"spec": {"unschedulable": True}})
    assert node.spec.unschedulable is True
    assert cluster.node_summary("node04")["unschedulable"] is True
    core.patch_node("node04", {"spec": {"unschedulable": None}})
    assert cluster.node_summary("node04")["unschedulable"] is False


def test_client_labels_with_merge_patch(cluster, core) -> None:
    core.patch_node("node04", {"metadata": {"labels": {"promenade": "yes"}}},
                    _content_type="application/merge-patch+json")
    assert cluster.node_summary("node04")["labels"]["promenade"] == "yes"
    core.patch_node("node04", {"metadata": {"labels": {"promenade": None}}},
                    _content_type="application/merge-patch+json")
    assert "promenade" not in cluster.node_summary("node04")["labels"]


def test_client_annotates_with_json_patch(core) -> None:
    node = core.patch_node("node05", [{"op": "add", "path": "/metadata/annotations/berth~1drain",
                                       "value": "started"}])
    assert node.metadata.annotations["berth/drain"] == "started"


def test_patch_of_main_resource_keeps_status(core) -> None:
    core.patch_node("node05", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    ready = [c for c in core.read_node("node05").status.conditions if c.type == "Ready"]
    assert ready[0].status == "True"


def test_status_subresource_patch_changes_status(core) -> None:
    core.patch_node_status("node05", {"status": {"conditions": [
        {"type": "NetworkUnavailable", "status": "True"}]}})
    conditions = {c.type: c.status for c in core.read_node("node05").status.conditions}
    assert conditions["NetworkUnavailable"] == "True"
    assert conditions["Ready"] == "True"


def test_put_replaces_node_labels(core) -> None:
    node = core.read_node("node06")
    node.metadata.labels = {"only": "this"}
    core.replace_node("node06", node)
    assert core.read_node("node06").metadata.labels == {"only": "this"}


def test_bad_patch_is_a_4xx_status_and_changes_nothing(core) -> None:
    before = core.read_node("node04").metadata.resource_version
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.patch_node("node04", [{"op": "remove", "path": "/metadata/missing"}])
    assert err.value.status == 422
    assert core.read_node("node04").metadata.resource_version == before
