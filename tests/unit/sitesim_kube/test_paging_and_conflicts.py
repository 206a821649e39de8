"""Paging with limit/continue, resourceVersion conflicts, AlreadyExists, and Leases."""

from __future__ import annotations

import datetime

import kubernetes
import pytest
from kubernetes.client import V1Lease, V1LeaseSpec, V1ObjectMeta


def test_paging_returns_every_pod_once(seeded, core) -> None:
    everything = {(p.metadata.namespace, p.metadata.name)
                  for p in core.list_pod_for_all_namespaces().items}
    seen: list[tuple[str, str]] = []
    token = None
    pages = 0
    while True:
        page = core.list_pod_for_all_namespaces(limit=5, _continue=token)
        seen += [(p.metadata.namespace, p.metadata.name) for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == len(everything) - len(seen)
    assert sorted(seen) == sorted(everything)
    assert pages == -(-len(everything) // 5)


def test_paging_in_a_namespace_with_selector(seeded, core) -> None:
    first = core.list_namespaced_pod("demo", label_selector="application=web", limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    rest = core.list_namespaced_pod("demo", label_selector="application=web", limit=2,
                                    _continue=first.metadata._continue)
    assert len(rest.items) == 1 and not rest.metadata._continue


def test_garbage_continue_token_is_400(core) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.list_node(limit=1, _continue="not-a-token")
    assert err.value.status == 400


def test_every_write_bumps_resource_version(core) -> None:
    before = int(core.read_node("node04").metadata.resource_version)
    after = core.patch_node("node04", {"metadata": {"labels": {"x": "y"}}})
    assert int(after.metadata.resource_version) > before


def test_put_with_stale_resource_version_is_409(core) -> None:
    stale = core.read_node("node04")
    core.patch_node("node04", {"metadata": {"labels": {"x": "1"}}})
    stale.metadata.labels["x"] = "2"
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.replace_node("node04", stale)
    assert err.value.status == 409
    assert "Conflict" in err.value.body
    assert core.read_node("node04").metadata.labels["x"] == "1"


def test_patch_carrying_stale_resource_version_is_409(core) -> None:
    old = core.read_node("node04").metadata.resource_version
    core.patch_node("node04", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.patch_node("node04", {"metadata": {"resourceVersion": old, "labels": {"x": "2"}}})
    assert err.value.status == 409


def test_create_existing_is_409_already_exists(core) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.create_namespace({"metadata": {"name": "default"}})
    assert err.value.status == 409
    assert "AlreadyExists" in err.value.body


def _lease(name: str, holder: str, namespace: str = "kube-system") -> V1Lease:
    return V1Lease(metadata=V1ObjectMeta(name=name, namespace=namespace),
                   spec=V1LeaseSpec(holder_identity=holder, lease_duration_seconds=30,
                                    acquire_time=datetime.datetime.now(datetime.UTC)))


def test_lease_lifecycle_serialises_holders(coordination) -> None:
    created = coordination.create_namespaced_lease("kube-system", _lease("etcd-remove", "a"))
    assert created.spec.holder_identity == "a"
    with pytest.raises(kubernetes.client.ApiException) as err:
        coordination.create_namespaced_lease("kube-system", _lease("etcd-remove", "b"))
    assert err.value.status == 409
    current = coordination.read_namespaced_lease("etcd-remove", "kube-system")
    current.spec.holder_identity = "b"
    updated = coordination.replace_namespaced_lease("etcd-remove", "kube-system", current)
    assert updated.spec.holder_identity == "b"
    current.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(kubernetes.client.ApiException) as err:
        coordination.replace_namespaced_lease("etcd-remove", "kube-system", current)
    assert err.value.status == 409
    coordination.delete_namespaced_lease("etcd-remove", "kube-system")
    with pytest.raises(kubernetes.client.ApiException) as err:
        coordination.read_namespaced_lease("etcd-remove", "kube-system")
    assert err.value.status == 404


def test_namespaces_list_and_get(core) -> None:
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system"} <= names
    assert core.read_namespace("kube-system").status.phase == "Active"


def test_object_in_missing_namespace_is_404(coordination) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        coordination.create_namespaced_lease("nowhere", _lease("x", "a", "nowhere"))
    assert err.value.status == 404


def test_namespace_in_body_must_match_url(coordination) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        coordination.create_namespaced_lease("default", _lease("x", "a", "kube-system"))
    assert err.value.status == 400
