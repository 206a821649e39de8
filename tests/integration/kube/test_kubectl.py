"""The kubectl built from the same Kubernetes modules as the site's control plane, against that
real control plane: version, nodes, labels, cordon, Deployments run by the real controllers and
scheduler, events, RBAC answers, drain against real PodDisruptionBudgets, node deletion, apply.
Every command's effect is checked through the API.

Skips when the binaries are not built (`make kube`), unless BERTH_KUBE_REQUIRED=1."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from sitesim.kube.controlplane import ControlPlane
from tests.support.kube import Admin, apply_shipped_rbac, wait_for

from .conftest import Kubectl, create_nodes, is_ready

pytestmark = pytest.mark.slow
IMAGE = "registry.invalid/app:1"
PDB_REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget"


def deployment(name: str, replicas: int, pool: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": name, "image": IMAGE}], **spec}}}}


def budget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {**spec, "selector": {"matchLabels": {"app": name}}}}


def apply(kubectl: Kubectl, namespace: str, *objects: dict[str, Any]) -> None:
    kubectl.ok("apply", "-n", namespace, "-f", "-",
               stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def ready_pods(admin: Admin, namespace: str, app: str) -> list[dict[str, Any]]:
    pods = admin.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp") and is_ready(p)]


def pdb_status(admin: Admin, namespace: str, name: str, healthy: int) -> dict[str, Any]:
    """The PDB's status once the disruption controller has seen its generation and `healthy`
    pods."""
    def settled() -> dict[str, Any] | None:
        pdb = admin.get(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}")
        status = pdb.get("status", {})
        done = (status.get("observedGeneration") == pdb["metadata"]["generation"]
                and status.get("currentHealthy") == healthy)
        return status if done else None

    status: dict[str, Any] = wait_for(f"PDB {namespace}/{name} status", settled)
    return status


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()[1:]]


def test_version_shows_the_built_server_version(kubectl: Kubectl, admin: Admin) -> None:
    version = kubectl.json("version")
    server = version["serverVersion"]
    assert server["major"] == "1" and server["minor"] == "36", server
    assert server["gitVersion"].startswith("v1.36.")
    assert version["clientVersion"]["gitVersion"] == server["gitVersion"]  # same modules
    assert admin.get("/version")["gitVersion"] == server["gitVersion"]
    assert f"Server Version: {server['gitVersion']}" in kubectl.ok("version")


def test_get_nodes_shows_the_kwok_nodes_ready(kubectl: Kubectl, admin: Admin) -> None:
    create_nodes(admin, "kc-get-1", "kc-get-2", pool="kc-get")
    out = kubectl.ok("get", "nodes", "-l", "pool=kc-get")
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {row[0]: row for row in table(out)}
    assert sorted(rows) == ["kc-get-1", "kc-get-2"]
    assert {row[1] for row in rows.values()} == {"Ready"}
    assert all(row[4].startswith("kwok-") for row in rows.values()), rows
    listed = kubectl.json("get", "nodes", "-l", "pool=kc-get")["items"]
    assert {n["spec"]["providerID"] for n in listed} == {"kwok://kc-get-1", "kwok://kc-get-2"}


def test_label_and_unlabel_a_node(kubectl: Kubectl, admin: Admin) -> None:
    create_nodes(admin, "kc-label")
    kubectl.ok("label", "node", "kc-label", "promenade-decomission=enabled")
    assert admin.node("kc-label")["metadata"]["labels"]["promenade-decomission"] == "enabled"
    refused = kubectl.run("label", "node", "kc-label", "promenade-decomission=done")
    assert refused.returncode != 0 and "--overwrite" in refused.stderr
    kubectl.ok("label", "node", "kc-label", "promenade-decomission=done", "--overwrite")
    assert admin.node("kc-label")["metadata"]["labels"]["promenade-decomission"] == "done"
    kubectl.ok("label", "node", "kc-label", "promenade-decomission-")
    assert "promenade-decomission" not in admin.node("kc-label")["metadata"]["labels"]


def test_cordon_keeps_new_pods_off_the_node_until_uncordon(kubectl: Kubectl,
                                                           admin: Admin) -> None:
    create_nodes(admin, "kc-cordon")
    assert "node/kc-cordon cordoned" in kubectl.ok("cordon", "kc-cordon")
    assert admin.node("kc-cordon")["spec"]["unschedulable"] is True
    assert table(kubectl.ok("get", "node", "kc-cordon"))[0][1] == "Ready,SchedulingDisabled"
    kubectl.ok("run", "kc-pinned", "--image", IMAGE, "--overrides", json.dumps(
        {"spec": {"nodeSelector": {"kubernetes.io/hostname": "kc-cordon"}}}))

    def unschedulable() -> bool:
        pod = admin.get("/api/v1/namespaces/default/pods/kc-pinned")
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in pod["status"].get("conditions", []))

    wait_for("the scheduler to refuse the cordoned node", unschedulable)
    assert "node/kc-cordon uncordoned" in kubectl.ok("uncordon", "kc-cordon")
    assert not admin.node("kc-cordon")["spec"].get("unschedulable")

    def running() -> dict[str, Any] | None:
        pod: dict[str, Any] = admin.get("/api/v1/namespaces/default/pods/kc-pinned")
        return pod if pod["status"].get("phase") == "Running" else None

    assert wait_for("the pod Running", running)["spec"]["nodeName"] == "kc-cordon"


def test_create_deployment_and_scale_run_pods_on_kwok_nodes(kubectl: Kubectl,
                                                            admin: Admin) -> None:
    create_nodes(admin, "kc-app-1", "kc-app-2", pool="kc-app")
    kubectl.ok("create", "namespace", "kc-apps")
    kubectl.ok("create", "deployment", "web", "-n", "kc-apps", "--image", IMAGE,
               "--replicas", "0")
    kubectl.ok("patch", "deployment", "web", "-n", "kc-apps", "--type", "merge", "-p",
               json.dumps({"spec": {"template": {"spec": {"nodeSelector": {"pool": "kc-app"}}}}}))
    assert "deployment.apps/web scaled" in kubectl.ok(
        "scale", "deployment", "web", "-n", "kc-apps", "--replicas", "4")

    def four() -> list[dict[str, Any]] | None:
        found = ready_pods(admin, "kc-apps", "web")
        return found if len(found) == 4 else None

    pods = wait_for("4 Ready pods", four)
    assert {p["spec"]["nodeName"] for p in pods} <= {"kc-app-1", "kc-app-2"}
    kubectl.ok("rollout", "status", "deployment/web", "-n", "kc-apps", "--timeout", "60s")
    status = admin.get("/apis/apps/v1/namespaces/kc-apps/deployments/web")["status"]
    assert status["readyReplicas"] == 4 and status["replicas"] == 4

    kubectl.ok("scale", "deployment", "web", "-n", "kc-apps", "--replicas", "1")
    wait_for("1 pod left", lambda: len(admin.get(
        "/api/v1/namespaces/kc-apps/pods?labelSelector=app%3Dweb")["items"]) == 1)


def test_get_events_shows_what_the_controllers_and_the_scheduler_did(kubectl: Kubectl,
                                                                     admin: Admin) -> None:
    create_nodes(admin, "kc-events", pool="kc-events")
    kubectl.ok("create", "namespace", "kc-events")
    apply(kubectl, "kc-events", deployment("web", 1, "kc-events"))
    [pod] = wait_for("the pod Ready", lambda: ready_pods(admin, "kc-events", "web"))
    wanted = {"ScalingReplicaSet", "SuccessfulCreate", "Scheduled"}

    def reasons() -> set[str] | None:
        found = {e["reason"] for e in kubectl.json("get", "events", "-n", "kc-events")["items"]}
        return found if wanted <= found else None

    wait_for("the controllers' and the scheduler's events", reasons)
    api_reasons = {e["reason"] for e in admin.get("/api/v1/namespaces/kc-events/events")["items"]}
    assert wanted <= api_reasons
    scheduled = kubectl.ok("get", "events", "-n", "kc-events",
                           "--field-selector", "reason=Scheduled")
    name = pod["metadata"]["name"]
    assert f"Successfully assigned kc-events/{name} to kc-events" in scheduled


CAN_I_PROMENADE = [  # what deploy/kubernetes/base grants Promenade's ServiceAccount
    (["create", "pods", "--subresource=eviction", "-n", "kc-any"], True),
    (["patch", "nodes"], True),
    (["delete", "nodes"], True),
    (["list", "pods", "-A"], True),
    (["get", "daemonsets.apps", "-n", "kc-any"], True),
    (["list", "poddisruptionbudgets.policy", "-A"], True),
    (["create", "leases.coordination.k8s.io", "-n", "berth"], True),
    (["create", "leases.coordination.k8s.io", "-n", "default"], False),
    (["update", "nodes"], False),
    (["get", "pods", "-n", "kc-any"], False),
    (["delete", "namespaces"], False),
    (["create", "secrets", "-n", "berth"], False),
    (["create", "deployments.apps", "-n", "kc-any"], False),
    (["delete", "daemonsets.apps", "-n", "kc-any"], False),
]


def test_auth_can_i_answers_for_the_admin_and_promenades_service_account(
        plane: ControlPlane, kubectl: Kubectl, admin: Admin, tmp_path: Path) -> None:
    namespace = apply_shipped_rbac(plane)
    assert namespace == "berth"
    for verb in ("delete", "create"):
        answer = kubectl.run("auth", "can-i", verb, "namespaces")
        assert (answer.returncode, answer.stdout.strip()) == (0, "yes")
    sa = plane.token_kubeconfig(tmp_path / "promenade.kubeconfig",
                                plane.service_account_token(namespace, "promenade"))
    whoami = json.loads(kubectl.ok("auth", "whoami", "-o", "json", kubeconfig=sa))
    assert whoami["status"]["userInfo"]["username"] == "system:serviceaccount:berth:promenade"
    answers = {" ".join(args): kubectl.run("auth", "can-i", *args, kubeconfig=sa)
               for args, _ in CAN_I_PROMENADE}
    got = {k: (a.returncode, a.stdout.strip()) for k, a in answers.items()}
    assert got == {" ".join(args): (0, "yes") if allowed else (1, "no")
                   for args, allowed in CAN_I_PROMENADE}

    # The answers hold: as the ServiceAccount, a node is patched and a pod evicted ...
    create_nodes(admin, "kc-auth", pool="kc-auth")
    kubectl.ok("create", "namespace", "kc-auth")
    apply(kubectl, "kc-auth", deployment("web", 1, "kc-auth"))
    [pod] = wait_for("the pod Ready", lambda: ready_pods(admin, "kc-auth", "web"))
    kubectl.ok("cordon", "kc-auth", kubeconfig=sa)
    assert admin.node("kc-auth")["spec"]["unschedulable"] is True
    name = pod["metadata"]["name"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": "kc-auth"}}
    kubectl.ok("create", "--raw", f"/api/v1/namespaces/kc-auth/pods/{name}/eviction",
               "-f", "-", stdin=json.dumps(eviction), kubeconfig=sa)
    wait_for("the evicted pod gone", lambda: admin.call(
        "GET", f"/api/v1/namespaces/kc-auth/pods/{name}").status_code == 404)
    # ... but no namespace deleted and no secret created.
    refused = kubectl.run("delete", "namespace", "kc-auth", kubeconfig=sa)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower()
    assert "deletionTimestamp" not in admin.get("/api/v1/namespaces/kc-auth")["metadata"]
    refused = kubectl.run("create", "secret", "generic", "kc-stolen", "-n", namespace,
                          "--from-literal=a=b", kubeconfig=sa)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower()
    assert admin.call("GET", f"/api/v1/namespaces/{namespace}/secrets/kc-stolen"
                      ).status_code == 404


def drain_args(node: str, timeout: str) -> list[str]:
    """Promenade's drain semantics: --force, DaemonSet pods stay, emptyDir data goes."""
    return ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
            "--grace-period", "1", "--timeout", timeout]


def test_drain_retries_a_pdb_refusal_until_the_replacement_is_ready(
        kubectl: Kubectl, admin: Admin, tmp_path: Path) -> None:
    """kwok makes a scheduled pod Ready at once and the Eviction API retries a conflicting
    eviction itself, so the budget refuses (429) only while the replacement cannot run: the
    second node joins the pool once kubectl has been refused."""
    ns = "kc-drain"
    create_nodes(admin, "kc-drain-1", pool=ns)
    create_nodes(admin, "kc-drain-2")
    kubectl.ok("create", "namespace", ns)
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
             "spec": {"selector": {"matchLabels": {"app": "agent"}},
                      "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                          "nodeSelector": {"pool": ns},
                          "containers": [{"name": "agent", "image": IMAGE}]}}}}
    debug = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug"},
             "spec": {"nodeName": "kc-drain-1", "terminationGracePeriodSeconds": 1,
                      "containers": [{"name": "debug", "image": IMAGE}]}}
    scratch = deployment("scratch", 1, ns, volumes=[{"name": "tmp", "emptyDir": {}}])
    apply(kubectl, ns, deployment("web", 2, ns), budget("web", minAvailable=1), agent, debug,
          scratch)
    wait_for("2 Ready web pods", lambda: len(ready_pods(admin, ns, "web")) == 2)
    wait_for("the scratch pod Ready", lambda: ready_pods(admin, ns, "scratch"))
    [kept] = wait_for("the agent Ready", lambda: ready_pods(admin, ns, "agent"))
    assert pdb_status(admin, ns, "web", 2)["disruptionsAllowed"] == 1
    fewest: list[int] = []
    stop = threading.Event()

    def watch_availability() -> None:
        while not stop.is_set():
            fewest.append(len(ready_pods(admin, ns, "web")))
            stop.wait(0.1)

    watcher = threading.Thread(target=watch_availability)
    watcher.start()
    out, err = tmp_path / "drain.out", tmp_path / "drain.err"
    drain = kubectl.start(*drain_args("kc-drain-1", "60s"), out=out, err=err)
    try:
        wait_for("a refusal by the budget", lambda: PDB_REFUSAL in err.read_text(), timeout=30)
        pending = [p for p in admin.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3Dweb")[
            "items"] if not p["spec"].get("nodeName")]
        assert len(pending) == 1, pending  # the first replacement, with nowhere to run
        kubectl.ok("label", "node", "kc-drain-2", f"pool={ns}")
        code = drain.wait(timeout=60)
    finally:
        if drain.poll() is None:
            drain.kill()
            drain.wait()
        stop.set()
        watcher.join()

    assert code == 0, err.read_text()
    stderr = err.read_text()
    assert "(will retry after 5s)" in stderr
    assert f"deleting Pods that declare no controller: {ns}/debug" in stderr
    assert f"ignoring DaemonSet-managed Pods: {ns}/{kept['metadata']['name']}" in stderr
    assert "node/kc-drain-1 drained" in out.read_text()
    assert min(fewest) >= 1, fewest  # the budget held throughout
    assert admin.node("kc-drain-1")["spec"]["unschedulable"] is True
    left = admin.pods_on("kc-drain-1")
    assert [p["metadata"]["uid"] for p in left] == [kept["metadata"]["uid"]]
    assert admin.call("GET", f"/api/v1/namespaces/{ns}/pods/debug").status_code == 404
    wait_for("web and scratch Ready on kc-drain-2", lambda: sorted(
        p["spec"]["nodeName"] for app in ("web", "scratch")
        for p in ready_pods(admin, ns, app)) == ["kc-drain-2"] * 3)


def test_drain_fails_at_its_timeout_when_the_pdb_never_allows(kubectl: Kubectl,
                                                              admin: Admin) -> None:
    ns = "kc-stuck"
    create_nodes(admin, "kc-stuck-1", pool=ns)
    kubectl.ok("create", "namespace", ns)
    apply(kubectl, ns, deployment("solo", 1, ns), budget("solo", minAvailable=1))
    [pod] = wait_for("the solo pod Ready", lambda: ready_pods(admin, ns, "solo"))
    assert pdb_status(admin, ns, "solo", 1)["disruptionsAllowed"] == 0

    done = kubectl.run(*drain_args("kc-stuck-1", "6s"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert PDB_REFUSAL in done.stderr
    assert "global timeout reached: 6s" in done.stderr
    assert 'There are pending nodes to be drained:\n kc-stuck-1' in done.stderr
    [same] = admin.pods_on("kc-stuck-1")
    assert same["metadata"]["uid"] == pod["metadata"]["uid"]
    assert admin.node("kc-stuck-1")["spec"]["unschedulable"] is True
    assert pdb_status(admin, ns, "solo", 1)["disruptionsAllowed"] == 0


def test_delete_node_deletes_exactly_that_node(kubectl: Kubectl, admin: Admin) -> None:
    create_nodes(admin, "kc-del-1", "kc-del-2")
    before = {n["metadata"]["name"] for n in admin.get("/api/v1/nodes")["items"]}
    assert 'node "kc-del-1" deleted' in kubectl.ok("delete", "node", "kc-del-1")
    assert admin.call("GET", "/api/v1/nodes/kc-del-1").status_code == 404
    after = {n["metadata"]["name"] for n in admin.get("/api/v1/nodes")["items"]}
    assert after == before - {"kc-del-1"}
    assert is_ready(admin.node("kc-del-2"))
    names = kubectl.ok("get", "nodes", "-o", "name").split()
    assert "node/kc-del-2" in names and "node/kc-del-1" not in names


def test_apply_creates_then_updates_a_pdb(kubectl: Kubectl, admin: Admin,
                                          tmp_path: Path) -> None:
    kubectl.ok("create", "namespace", "kc-apply")
    path = "/apis/policy/v1/namespaces/kc-apply/poddisruptionbudgets/cache"
    manifest = tmp_path / "pdb.yaml"
    manifest.write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: cache, namespace: kc-apply}\n"
        "spec:\n  minAvailable: 1\n  selector: {matchLabels: {app: cache}}\n")
    assert "poddisruptionbudget.policy/cache created" in kubectl.ok("apply", "-f", str(manifest))
    created = admin.get(path)
    assert created["spec"]["minAvailable"] == 1 and created["metadata"]["generation"] == 1

    manifest.write_text(manifest.read_text().replace("minAvailable: 1", "maxUnavailable: 0"))
    assert "poddisruptionbudget.policy/cache configured" in kubectl.ok(
        "apply", "-f", str(manifest))
    updated = admin.get(path)
    assert updated["spec"]["maxUnavailable"] == 0 and "minAvailable" not in updated["spec"]
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["generation"] == 2
    # Applied again unchanged: kubectl still sends the PDB's selector (its patch strategy is
    # replace) and says "configured", but the object does not change.
    assert "configured" in kubectl.ok("apply", "-f", str(manifest))
    assert admin.get(path)["metadata"]["generation"] == 2


def test_get_pdb_all_namespaces_shows_the_disruption_controllers_status(
        kubectl: Kubectl, admin: Admin) -> None:
    ns = "kc-pdb"
    create_nodes(admin, "kc-pdb-1", pool=ns)
    kubectl.ok("create", "namespace", ns)
    apply(kubectl, ns, deployment("web", 3, ns), budget("web", maxUnavailable=1),
          deployment("db", 2, ns), budget("db", minAvailable=2))
    assert pdb_status(admin, ns, "web", 3)["disruptionsAllowed"] == 1
    assert pdb_status(admin, ns, "db", 2)["disruptionsAllowed"] == 0

    def rows() -> dict[str, list[str]]:
        out = kubectl.ok("get", "pdb", "-A")
        assert out.splitlines()[0].split() == ["NAMESPACE", "NAME", "MIN", "AVAILABLE", "MAX",
                                               "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
        return {row[1]: row[:5] for row in table(out) if row[0] == ns}

    assert rows() == {"web": [ns, "web", "N/A", "1", "1"], "db": [ns, "db", "2", "N/A", "0"]}
    kubectl.ok("scale", "deployment", "db", "-n", ns, "--replicas", "3")
    assert pdb_status(admin, ns, "db", 3)["disruptionsAllowed"] == 1
    assert rows()["db"] == [ns, "db", "2", "N/A", "1"]
