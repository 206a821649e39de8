"""PodDisruptionBudget arithmetic (table) and its status kept current through the API."""

from __future__ import annotations

import pytest

from sitesim.kubeapi.disruption import Budget, compute_budget

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1",
         "controller": True}


def _pod(i: int, ready: bool = True, terminating: bool = False, owned: bool = True) -> dict:
    meta: dict = {"name": f"p{i}", "namespace": "demo", "labels": {"app": "web"}}
    if owned:
        meta["ownerReferences"] = [OWNER]
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def _pdb(**spec: object) -> dict:
    return {"metadata": {"name": "web", "namespace": "demo"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


@pytest.mark.parametrize(("spec", "pods", "replicas", "expected"), [
    # minAvailable int: expected = matching pods, desired = minAvailable
    ({"minAvailable": 2}, [_pod(0), _pod(1), _pod(2)], 3, Budget(3, 2, 1, 3)),
    ({"minAvailable": 2}, [_pod(0), _pod(1), _pod(2, terminating=True)], 3, Budget(2, 2, 0, 3)),
    ({"minAvailable": 3}, [_pod(0), _pod(1)], 3, Budget(2, 3, 0, 2)),
    ({"minAvailable": 0}, [_pod(0)], 1, Budget(1, 0, 1, 1)),
    # minAvailable percent: expected = controller scale, desired rounded up
    ({"minAvailable": "50%"}, [_pod(0), _pod(1), _pod(2)], 3, Budget(3, 2, 1, 3)),
    ({"minAvailable": "100%"}, [_pod(0), _pod(1)], 2, Budget(2, 2, 0, 2)),
    # maxUnavailable: desired = expected - maxUnavailable (percent rounded up)
    ({"maxUnavailable": 1}, [_pod(0), _pod(1), _pod(2)], 3, Budget(3, 2, 1, 3)),
    ({"maxUnavailable": 1}, [_pod(0), _pod(1, ready=False), _pod(2)], 3, Budget(2, 2, 0, 3)),
    ({"maxUnavailable": "34%"}, [_pod(0), _pod(1), _pod(2)], 3, Budget(3, 1, 2, 3)),
    ({"maxUnavailable": 0}, [_pod(0), _pod(1)], 2, Budget(2, 2, 0, 2)),
    # controller scale counts pods not yet recreated
    ({"maxUnavailable": 1}, [_pod(0), _pod(1)], 3, Budget(2, 2, 0, 3)),
    # unmanaged pods: expected = matching pods
    ({"maxUnavailable": 1}, [_pod(0, owned=False), _pod(1, owned=False)], 0, Budget(2, 1, 1, 2)),
    # nothing selected: no disruption allowed
    ({"minAvailable": 0}, [], 0, Budget(0, 0, 0, 0)),
])
def test_budget_arithmetic(spec: dict, pods: list, replicas: int, expected: Budget) -> None:
    assert compute_budget(_pdb(**spec), pods, lambda kind, ns, name: replicas) == expected


def test_pdb_status_follows_the_pods(seeded, core, policy) -> None:
    from tests.unit.sitesim_kube.conftest import wait_for

    status = policy.read_namespaced_pod_disruption_budget("web", "demo").status
    assert (status.current_healthy, status.desired_healthy, status.disruptions_allowed,
            status.expected_pods) == (3, 2, 1, 3)
    seeded.set_ready("node04", False)

    def degraded() -> bool:
        s = policy.read_namespaced_pod_disruption_budget("web", "demo").status
        return (s.current_healthy, s.disruptions_allowed) == (2, 0)
    wait_for(degraded)
    pdb = policy.list_pod_disruption_budget_for_all_namespaces().items[0]
    assert pdb.status.conditions[0].reason == "InsufficientPods"
