"""Label and field selectors, parsed directly and used by list calls."""

from __future__ import annotations

import kubernetes
import pytest

from sitesim.kubeapi.errors import KubeBadRequest
from sitesim.kubeapi.selectors import (
    label_selector_from_object,
    matches,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "n": "5"}


@pytest.mark.parametrize(("text", "expected"), [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app!=web", False),
    ("app=web,tier=back", False),
    ("tier in (front,back)", True),
    ("tier notin (front)", False),
    ("app", True),
    ("!app", False),
    ("missing", False),
    ("!missing", True),
    ("missing!=x", True),
    ("app in (web), tier", True),
])
def test_label_selector_text(text: str, expected: bool) -> None:
    assert matches(parse_label_selector(text), LABELS) is expected


def test_label_selector_object_with_expressions() -> None:
    selector = label_selector_from_object({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front"]},
        {"key": "gone", "operator": "DoesNotExist"}]})
    assert matches(selector, LABELS)
    assert not matches(label_selector_from_object(None), LABELS)


def test_unparseable_label_selector_is_rejected() -> None:
    with pytest.raises(KubeBadRequest):
        parse_label_selector("app in (web")


def test_unknown_field_selector_is_rejected() -> None:
    with pytest.raises(KubeBadRequest):
        parse_field_selector("spec.color=blue", "pods")


def test_list_nodes_by_label_selector(core) -> None:
    names = [n.metadata.name for n in core.list_node(
        label_selector="openstack-compute-node=enabled").items]
    assert names == ["node04", "node05", "node06"]
    assert len(core.list_node(label_selector="node-role.kubernetes.io/control-plane").items) == 3


def test_list_nodes_by_field_selector(core) -> None:
    names = [n.metadata.name for n in core.list_node(field_selector="metadata.name=node02").items]
    assert names == ["node02"]


def test_list_pods_on_a_node_across_namespaces(seeded, core) -> None:
    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node04").items
    assert pods and all(p.spec.node_name == "node04" for p in pods)
    assert {p.metadata.namespace for p in pods} == {"demo", "kube-system"}


def test_list_pods_in_namespace_by_labels_and_node(seeded, core) -> None:
    pods = core.list_namespaced_pod("demo", label_selector="application=web",
                                    field_selector="spec.nodeName!=node04").items
    assert len(pods) == 2
    assert all(p.metadata.labels["application"] == "web" for p in pods)


def test_bad_field_selector_answers_400_status(core) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.list_pod_for_all_namespaces(field_selector="spec.color=blue")
    assert err.value.status == 400
