"""The eviction subresource: 201, 429 under a budget, 500 with two budgets or a fault, 404."""

from __future__ import annotations

import json

import kubernetes
import pytest
from kubernetes.client import V1DeleteOptions, V1Eviction, V1ObjectMeta

from tests.unit.sitesim_kube.conftest import wait_for


def _evict(core, name: str, namespace: str = "demo", grace: int | None = 1):  # noqa: ANN202
    body = V1Eviction(metadata=V1ObjectMeta(name=name, namespace=namespace),
                      delete_options=V1DeleteOptions(grace_period_seconds=grace))
    return core.create_namespaced_pod_eviction(name, namespace, body)


def _web_pods(core, node: str | None = None) -> list:  # noqa: ANN001
    selector = f"spec.nodeName={node}" if node else None
    return [p for p in core.list_namespaced_pod("demo", label_selector="application=web",
                                                field_selector=selector).items]


def _gone(core, name: str, namespace: str = "demo") -> bool:  # noqa: ANN001
    try:
        core.read_namespaced_pod(name, namespace)
    except kubernetes.client.ApiException as exc:
        return exc.status == 404
    return False


def test_allowed_eviction_is_201_and_the_pod_terminates(seeded, core) -> None:
    victim = _web_pods(core, "node04")[0].metadata.name
    _evict(core, victim)
    assert core.read_namespaced_pod(victim, "demo").metadata.deletion_timestamp is not None
    wait_for(lambda: _gone(core, victim))


def test_eviction_that_would_break_the_budget_is_429(seeded, core, policy) -> None:
    first, second = (p.metadata.name for p in _web_pods(core)[:2])
    _evict(core, first)
    with pytest.raises(kubernetes.client.ApiException) as err:
        _evict(core, second)
    assert err.value.status == 429
    body = json.loads(err.value.body)
    assert body["kind"] == "Status" and body["reason"] == "TooManyRequests"
    assert "disruption budget web needs 2 healthy pods" in body["details"]["causes"][0]["message"]
    assert core.read_namespaced_pod(second, "demo").metadata.deletion_timestamp is None


def test_recreation_lets_a_blocked_eviction_succeed_later(seeded, core, policy) -> None:
    first, second = (p.metadata.name for p in _web_pods(core)[:2])
    _evict(core, first)
    with pytest.raises(kubernetes.client.ApiException):
        _evict(core, second)

    def healthy_again() -> bool:
        status = policy.read_namespaced_pod_disruption_budget("web", "demo").status
        return status.disruptions_allowed == 1 and status.current_healthy == 3
    wait_for(healthy_again)
    _evict(core, second)
    wait_for(lambda: _gone(core, second))


def test_pod_matching_two_budgets_is_500(seeded, core, policy) -> None:
    policy.create_namespaced_pod_disruption_budget("demo", {
        "metadata": {"name": "web-too"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"application": "web"}}}})
    victim = _web_pods(core)[0].metadata.name
    with pytest.raises(kubernetes.client.ApiException) as err:
        _evict(core, victim)
    assert err.value.status == 500
    assert "more than one PodDisruptionBudget" in err.value.body


def test_evicting_a_missing_pod_is_404(seeded, core) -> None:
    with pytest.raises(kubernetes.client.ApiException) as err:
        _evict(core, "no-such-pod")
    assert err.value.status == 404
    assert json.loads(err.value.body)["reason"] == "NotFound"


def test_pod_without_budget_is_evicted(seeded, core) -> None:
    _evict(core, "debug-shell")
    wait_for(lambda: _gone(core, "debug-shell"))


def test_eviction_fault_fail_answers_500_and_keeps_the_pod(seeded, hooks, core) -> None:
    hooks.faults[("kube.eviction", "node04")] = "fail"
    with pytest.raises(kubernetes.client.ApiException) as err:
        _evict(core, "debug-shell")
    assert err.value.status == 500
    assert core.read_namespaced_pod("debug-shell", "demo").metadata.deletion_timestamp is None


def test_eviction_fault_hang_never_completes(seeded, hooks, core) -> None:
    hooks.faults[("kube.eviction", "node04")] = "hang"
    _evict(core, "debug-shell")
    _evict(core, "scratch-cache")  # on node05: terminates normally
    wait_for(lambda: _gone(core, "scratch-cache"))
    pod = core.read_namespaced_pod("debug-shell", "demo")
    assert pod.metadata.deletion_timestamp is not None


def test_delete_with_grace_period_zero_removes_at_once(seeded, core) -> None:
    core.delete_namespaced_pod("debug-shell", "demo", grace_period_seconds=0)
    assert _gone(core, "debug-shell")


def test_graceful_delete_marks_then_removes(seeded, core) -> None:
    pod = core.delete_namespaced_pod("scratch-cache", "demo", grace_period_seconds=5)
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 5
    wait_for(lambda: _gone(core, "scratch-cache"))


def test_calls_are_counted_per_node(seeded, hooks, core) -> None:
    core.read_node("node04")
    core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node04")
    core.patch_node("node04", {"spec": {"unschedulable": True}})
    _evict(core, "debug-shell")
    core.delete_node("node06")
    assert hooks.calls[("kube", "get_node", "node04")] == 1
    assert hooks.calls[("kube", "list_pods", "node04")] == 1
    assert hooks.calls[("kube", "patch_node", "node04")] == 1
    assert hooks.calls[("kube", "eviction", "node04")] == 1
    assert hooks.calls[("kube", "delete_node", "node06")] == 1


def test_site_hooks_are_called_without_the_cluster_lock(seeded, hooks, core) -> None:
    import threading
    lock_free: list[bool] = []
    original = hooks.fault

    def fault(operation: str, node: str):  # type: ignore[no-untyped-def]
        result: list[object] = []
        worker = threading.Thread(target=lambda: result.append(seeded.node_summary(node)))
        worker.start()
        worker.join(timeout=5)
        lock_free.append(bool(result))
        return original(operation, node)
    hooks.fault = fault  # type: ignore[method-assign]
    _evict(core, "debug-shell")
    core.patch_node("node04", {"metadata": {"labels": {"promenade-decomission": "enabled"}}})
    wait_for(lambda: len(lock_free) >= 2)
    assert all(lock_free)


def test_concurrent_evictions_respect_the_budget(seeded, core) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = [p.metadata.name for p in _web_pods(core)]

    def attempt(name: str) -> int:
        try:
            _evict(core, name)
        except kubernetes.client.ApiException as exc:
            return int(exc.status)
        return 201
    with ThreadPoolExecutor(max_workers=3) as pool:
        codes = sorted(pool.map(attempt, names))
    assert codes == [201, 429, 429]
