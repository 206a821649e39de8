"""The site's real Kubernetes follows the hosts: power and the kubelet-shutdown pod stop a
node's kubelet and the real node-lifecycle controller notices; `kube.eviction` faults act as a
sick kubelet (`hang`) or a site policy (`fail`) through the real apiserver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.site import start_test_site, stop_site
from tests.integration.sitesim.conftest import calls, node, wait_for

pytestmark = pytest.mark.slow
UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture(scope="module")
def sitesim_site() -> Iterator[Site]:
    """A site of this module's own: the other modules' tests power nodes off and erase them."""
    site = start_test_site()
    try:
        yield site
    finally:
        stop_site(site)


def kube_node(site: Site, name: str) -> dict[str, Any]:
    assert site.kube is not None
    return site.kube.api.get(f"/api/v1/nodes/{name}") or {}


def taints(site: Site, name: str) -> set[str]:
    return {t["key"] for t in kube_node(site, name).get("spec", {}).get("taints") or []}


def pods_on(site: Site, name: str, prefix: str) -> list[dict[str, Any]]:
    assert site.kube is not None
    found = site.kube.api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{name}") or {}
    return [p for p in found.get("items", []) if p["metadata"]["name"].startswith(prefix)]


def evict(site: Site, pod: dict[str, Any], dry_run: bool = False) -> requests.Response:
    assert site.kube is not None
    meta = pod["metadata"]
    query = "?dryRun=All" if dry_run else ""
    return site.kube.api.call(
        "POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/eviction{query}",
        {"apiVersion": "policy/v1", "kind": "Eviction",
         "metadata": {"name": meta["name"], "namespace": meta["namespace"]}},
        ok=(201, 403, 422, 429, 500))


def set_power(site: Site, name: str, power: str) -> None:
    reply = requests.put(f"{site.urls['sitesim']}/nodes/{name}/power", json={"power": power},
                         timeout=10)
    assert reply.status_code == 200, reply.text


def fault(site: Site, name: str, effect: str) -> None:
    reply = requests.post(f"{site.urls['sitesim']}/faults", timeout=30, json={
        "node": name, "operation": "kube.eviction", "effect": effect})
    assert reply.status_code == 201, reply.text


def clear_faults(site: Site) -> None:
    assert requests.delete(f"{site.urls['sitesim']}/faults", timeout=30).status_code == 204


def test_the_demo_workloads_are_run_by_the_real_controllers(sitesim_site: Site) -> None:
    assert sitesim_site.kube is not None
    api = sitesim_site.kube.api
    web = wait_for(lambda: (lambda d: d if d.get("status", {}).get("readyReplicas") == 3
                            else None)(api.get("/apis/apps/v1/namespaces/demo/deployments/web")
                                       or {}), timeout=60)
    assert web["spec"]["replicas"] == 3
    queue = wait_for(lambda: (lambda s: s if s.get("status", {}).get("readyReplicas") == 2
                              else None)(api.get("/apis/apps/v1/namespaces/demo/statefulsets/"
                                                 "queue") or {}), timeout=60)
    assert queue["status"]["replicas"] == 2
    pdb = api.get("/apis/policy/v1/namespaces/demo/poddisruptionbudgets/web") or {}
    assert pdb["status"]["currentHealthy"] == 3 and pdb["status"]["disruptionsAllowed"] == 1
    agents = api.get("/apis/apps/v1/namespaces/kube-system/daemonsets/node-agent") or {}
    assert agents["status"]["numberReady"] == 6
    mirrors = [p for p in pods_on(sitesim_site, "node01", "kube-")
               if "kubernetes.io/config.mirror" in p["metadata"].get("annotations", {})]
    assert sorted(p["metadata"]["name"] for p in mirrors) == [
        "kube-apiserver-node01", "kube-scheduler-node01"]


def test_a_powered_off_server_turns_unknown_and_tainted_then_rejoins_when_on(
        sitesim_site: Site) -> None:
    set_power(sitesim_site, "node05", "off")
    wait_for(lambda: UNREACHABLE in taints(sitesim_site, "node05"), timeout=90)
    assert node(sitesim_site, "node05")["kubernetes"]["ready"] is False
    set_power(sitesim_site, "node05", "on")
    wait_for(lambda: node(sitesim_site, "node05")["kubernetes"]["ready"], timeout=90)
    wait_for(lambda: UNREACHABLE not in taints(sitesim_site, "node05"), timeout=60)


def test_the_kubelet_shutdown_pod_completes_and_stops_that_kubelet(sitesim_site: Site) -> None:
    assert sitesim_site.kube is not None
    api = sitesim_site.kube.api
    api.patch("/api/v1/nodes/node04", {"metadata": {"labels": {
        "promenade-decomission": "enabled"}}})
    try:
        # The pod's script ends (Succeeded), the host's kubelet stops. The real DaemonSet
        # controller deletes a Succeeded daemon pod and creates another at once, so the
        # finished pod is seen in the site's record, not by polling the pods.
        wait_for(lambda: calls(sitesim_site, system="kube", op="kubelet_stopped",
                               node="node04"), timeout=60)
        wait_for(lambda: node(sitesim_site, "node04")["kubernetes"]["kubelet"] is False)
        replacement = wait_for(lambda: pods_on(sitesim_site, "node04", "kubelet-shutdown"))
        assert all(p["status"].get("phase") == "Pending" for p in replacement)
        wait_for(lambda: UNREACHABLE in taints(sitesim_site, "node04"), timeout=90)
    finally:
        api.patch("/api/v1/nodes/node04", {"metadata": {"labels": {
            "promenade-decomission": None}}})
        sitesim_site.kube.set_ready("node04", True)
    wait_for(lambda: node(sitesim_site, "node04")["kubernetes"]["ready"], timeout=90)


def test_a_hung_eviction_keeps_the_pod_terminating_until_the_fault_is_cleared(
        sitesim_site: Site) -> None:
    [pod] = pods_on(sitesim_site, "node06", "node-agent")
    fault(sitesim_site, "node06", "hang")
    try:
        assert evict(sitesim_site, pod).status_code == 201
        name = pod["metadata"]["name"]
        wait_for(lambda: [p for p in pods_on(sitesim_site, "node06", name)
                          if p["metadata"].get("deletionTimestamp")])
        # kwok's stage would remove it within its 2 s grace period; the sick kubelet does not
        terminating = pods_on(sitesim_site, "node06", name)
        assert terminating and terminating[0]["metadata"]["uid"] == pod["metadata"]["uid"]
    finally:
        clear_faults(sitesim_site)
    wait_for(lambda: not [p for p in pods_on(sitesim_site, "node06", "node-agent")
                          if p["metadata"]["uid"] == pod["metadata"]["uid"]], timeout=30)


def test_a_failing_eviction_is_refused_by_the_apiserver_and_allowed_once_cleared(
        sitesim_site: Site) -> None:
    [pod] = pods_on(sitesim_site, "node03", "node-agent")
    fault(sitesim_site, "node03", "fail")
    try:
        # the apiserver enforces a new policy within moments: probe without effect first
        wait_for(lambda: evict(sitesim_site, pod, dry_run=True).status_code != 201, timeout=30)
        refused = evict(sitesim_site, pod)
        assert refused.status_code in (403, 422) and "injected fault" in refused.text
        assert [p["metadata"]["uid"] for p in pods_on(sitesim_site, "node03", "node-agent")
                ] == [pod["metadata"]["uid"]]
    finally:
        clear_faults(sitesim_site)
    wait_for(lambda: evict(sitesim_site, pod, dry_run=True).status_code == 201, timeout=30)
    assert evict(sitesim_site, pod).status_code == 201
