"""redeploy_server past a PodDisruptionBudget at zero, through the whole chain: the plan names
the budget and its pod; a reader cannot give the leave (403) and bad leaves are 400 listing
every problem; with disrupt-pdbs naming it and disrupt-after 3 s the action completes, the pod
deleted no sooner, recorded with the operator in the action and in Promenade's log."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from promenade_api.kube.client import load_api_client
from sitesim.kube.workloads import DEMO_NAMESPACE as NS
from tests.e2e.conftest import create, steps_of
from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow
NODE = "node06"
APP = "pinned-e2e"
LEAVE = {"disrupt-pdbs": [{"namespace": NS, "name": APP}], "disrupt-after": 3}


@pytest.fixture
def pinned(berth: Berth) -> Iterator[str]:
    """One Ready pod of Deployment APP on NODE behind a budget allowing no disruption; its
    name. Both are deleted afterwards."""
    api = load_api_client(str(berth.site.kubeconfig))
    apps, policy, core = client.AppsV1Api(api), client.PolicyV1Api(api), client.CoreV1Api(api)
    labels = {"application": APP}
    apps.create_namespaced_deployment(NS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": APP},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "nodeSelector": {"kubernetes.io/hostname": NODE},
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": APP, "image": "registry.invalid/app:1"}]}}}})
    policy.create_namespaced_pod_disruption_budget(NS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": APP},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}})
    try:
        def ready() -> str | None:
            pods = core.list_namespaced_pod(NS, label_selector=f"application={APP}").items
            up = [p.metadata.name for p in pods if p.status.conditions and any(
                c.type == "Ready" and c.status == "True" for c in p.status.conditions)]
            status = policy.read_namespaced_pod_disruption_budget(APP, NS).status
            settled = status and status.observed_generation and status.current_healthy == 1
            return up[0] if up and settled and status.disruptions_allowed == 0 else None

        yield str(wait_for(ready, 90, f"{APP} Ready behind its budget at zero"))
    finally:
        apps.delete_namespaced_deployment(APP, NS)
        policy.delete_namespaced_pod_disruption_budget(APP, NS)


def redeploy(**params: Any) -> dict[str, Any]:
    return {"name": "redeploy_server", "parameters": {"target_nodes": [NODE], **params}}


def test_redeploy_past_a_named_budget_at_zero(berth: Berth, successful_revision: int,
                                              pinned: str) -> None:
    pod = f"{NS}/{pinned}"
    plan = berth.api("POST", "/plans", json=redeploy()).json()
    assert any(b["node"] == NODE and f"PodDisruptionBudget {NS}/{APP} allows 0 disruptions"
               in b["message"] and pod in b["message"] for b in plan["blockers"]), plan

    assert berth.api("POST", "/actions", token="reader", json=redeploy(**LEAVE)
                     ).status_code == 403
    bad = berth.api("POST", "/actions", json=redeploy(**{
        "disrupt-pdbs": [{"namespace": "Demo", "name": APP}, {"name": "x"}],
        "disrupt-after": -1}))
    assert bad.status_code == 400, bad.text
    assert len(bad.json()["details"]["messageList"]) == 3, bad.json()

    started = time.time()
    action = create(berth, "redeploy_server", target_nodes=[NODE], **LEAVE)
    view = berth.wait_action(action["id"], timeout=240)
    assert view["state"] == "complete", (view.get("message"), berth.logs())
    assert view["parameters"]["disrupt-pdbs-allowed-by"] == "admin"
    step = steps_of(view)[f"decommission.{NODE}"]
    details = berth.api("GET", f"/actions/{action['id']}/steps/{step['id']}").json()["details"]
    [entry] = details["disrupted"]
    assert (entry["pod"], entry["budget"], entry["allowed_by"]) == (pod, f"{NS}/{APP}",
                                                                    "admin")
    assert entry["at"] - started >= 3.0
    log = berth.procs["promenade"].proc.output()
    assert f"deleting {pod} (disruption allowed by admin)" in log
    # Shipyard calls Promenade as its service and passes the operator on (X-End-User).
    assert f"{NODE}/decommission: admin gives leave to disrupt PodDisruptionBudget(s) " \
        f"{NS}/{APP} after 3s (passed on by berth-service)" in log
