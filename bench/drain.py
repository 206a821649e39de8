"""Drain two identical nodes of a real control plane, one with `kubectl drain` and one with
Promenade's drain, several runs alternating; print the wall time and the API requests of each.

The control plane is the site's own (sitesim.kube: etcd, kube-apiserver, controller-manager,
scheduler, kwok as the kubelets), with an audit log. Each run creates, in a fresh namespace
and for each of the nodes bench-a and bench-b: Deployments `cache` and `web`, each behind a
PDB allowing one disruption, a Deployment `api` without one, a Deployment `scratch` using
emptyDir, bare pods (no controller) and a DaemonSet pod; every pod has the same grace period.
Replacements can go to spare-a and spare-b; kwok makes a pod Ready `--ready-delay` seconds
after it is scheduled (so a PDB refuses while a replacement starts). Then bench-a and bench-b
are drained, one by

- the kubectl built from the same modules: `drain --ignore-daemonsets --delete-emptydir-data
  --force --grace-period G --timeout T`, as a ServiceAccount bound to cluster-admin (its
  discovery cache warmed first, as an operator's is);
- promenade-api under gunicorn, as the `promenade` ServiceAccount with the RBAC of
  deploy/kubernetes/base: `POST /api/v1.0/nodes/{node}/drain?timeout=T&grace-period=G`, its
  default settings (5 s between eviction retries, as kubectl).

The requests are counted from the apiserver's audit log by the user that made them.

    .venv/bin/python bench/drain.py [--runs 4] [--ready-delay 1.0] [--api-replicas 12]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sitesim.kube.binaries import KubeBinaries, kube_binaries  # noqa: E402
from sitesim.kube.controlplane import ControlPlane  # noqa: E402
from tests.support.kube import Admin, apply_shipped_rbac, wait_for  # noqa: E402
from tests.support.services import ServiceProcess, write_tokens  # noqa: E402

NODES = {"a": "bench-a", "b": "bench-b"}
SPARES = {"a": "spare-a", "b": "spare-b"}
GRACE = 2  # the pods' terminationGracePeriodSeconds, and both drains' grace period
TIMEOUT = 300
IMAGE = "registry.invalid/app:1"
MERGE = "application/merge-patch+json"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    # The controllers, kwok and the bench's own setup use the admin certificate: not logged.
    "rules": [{"level": "None", "users": ["kubernetes-admin"]}, {"level": "Metadata"}],
}


@dataclass
class Result:
    tool: str
    run: int
    node: str
    seconds: float
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def requests(self) -> int:
        return sum(self.kinds.values())


# -- the control plane and the two drainers ------------------------------------------------
def binaries_with_ready_delay(binaries: KubeBinaries, work: Path, delay: float) -> KubeBinaries:
    """The same binaries, with kwok's pod-ready Stage delayed by `delay` seconds."""
    root = work / "binaries"
    (root / "stages").mkdir(parents=True)
    (root / "bin").symlink_to(binaries.bin_dir)
    for stage in binaries.stages_dir.glob("*.yaml"):
        doc = yaml.safe_load(stage.read_text())
        if doc["metadata"]["name"] == "pod-ready" and delay > 0:
            doc["spec"]["delay"] = {"durationMilliseconds": int(delay * 1000)}
        (root / "stages" / stage.name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return KubeBinaries(root / "bin")


def start_plane(work: Path, ready_delay: float) -> ControlPlane:
    binaries = binaries_with_ready_delay(kube_binaries(build=True), work, ready_delay)
    policy = work / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    plane = ControlPlane(work / "kube", binaries, extra_apiserver_args=[
        f"--audit-policy-file={policy}", f"--audit-log-path={work / 'audit.log'}",
        "--audit-log-mode=blocking"])
    plane.start()
    return plane


@dataclass
class Kubectl:
    """The built kubectl as the `bench-kubectl` ServiceAccount (cluster-admin)."""

    path: Path
    kubeconfig: Path
    cache: Path
    user: str

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, KUBECACHEDIR=str(self.cache))
        env.pop("KUBECONFIG", None)
        return subprocess.run([str(self.path), f"--kubeconfig={self.kubeconfig}", *args],
                              env=env, capture_output=True, text=True, timeout=TIMEOUT + 60,
                              check=False)

    def drain(self, node: str) -> None:
        done = self.run("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                        "--force", f"--grace-period={GRACE}", f"--timeout={TIMEOUT}s")
        if done.returncode != 0:
            raise SystemExit(f"kubectl drain {node} failed:\n{done.stderr[-3000:]}")


def make_kubectl(plane: ControlPlane, admin: Admin, namespace: str, work: Path) -> Kubectl:
    admin.create(f"/api/v1/namespaces/{namespace}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench-kubectl"}})
    admin.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "bench-kubectl"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench-kubectl",
                      "namespace": namespace}]})
    config = plane.token_kubeconfig(work / "kubectl.kubeconfig",
                                    plane.service_account_token(namespace, "bench-kubectl"))
    kubectl = Kubectl(plane.binaries.kubectl, config, work / "kubectl-cache",
                      f"system:serviceaccount:{namespace}:bench-kubectl")
    kubectl.run("get", "nodes")  # discovery cached, as on an operator's machine
    return kubectl


@dataclass
class Promenade:
    proc: ServiceProcess
    token: str
    user: str

    def drain(self, node: str) -> None:
        reply = requests.post(f"{self.proc.url}/api/v1.0/nodes/{node}/drain",
                              params={"timeout": TIMEOUT, "grace-period": GRACE},
                              headers={"X-Auth-Token": self.token}, timeout=TIMEOUT + 60)
        if reply.status_code != 200:
            raise SystemExit(f"Promenade's drain of {node} failed: {reply.text[-3000:]}")


def start_promenade(plane: ControlPlane, namespace: str, work: Path) -> Promenade:
    config = plane.token_kubeconfig(work / "promenade.kubeconfig",
                                    plane.service_account_token(namespace, "promenade"))
    tokens = write_tokens(work / "tokens.yaml")
    proc = ServiceProcess("promenade", work, {
        "auth": {"strategy": "token", "token_file": work / "tokens.yaml"},
        "kubernetes": {"kubeconfig": config, "lease_namespace": namespace},
        "logging": {"json": "false", "level": "WARNING"},
        "database": {"connection": f"sqlite:///{work / 'promenade.db'}"},
    })
    return Promenade(proc, tokens["admin"], f"system:serviceaccount:{namespace}:promenade")


# -- the workloads -----------------------------------------------------------------------
def pod_spec(pool: str, **extra: Any) -> dict[str, Any]:
    return {"nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": GRACE,
            "containers": [{"name": "app", "image": IMAGE}], **extra}


def deployment(name: str, replicas: int, pool: str, **extra: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": pod_spec(pool, **extra)}}}


BUDGETS = {"cache": (3, {"minAvailable": 2}), "web": (4, {"maxUnavailable": 1})}
OTHERS = 2 + 2  # the scratch Deployment's pods and the bare pods


def budgeted(name: str, pool: str) -> list[dict[str, Any]]:
    """A Deployment behind a PDB that allows one disruption at a time."""
    replicas, spec = BUDGETS[name]
    selector = {"matchLabels": {"app": f"{name}-{pool}"}}
    return [deployment(f"{name}-{pool}", replicas, pool),
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": f"{name}-{pool}"}, "spec": {**spec, "selector": selector}}]


def to_remove(api_replicas: int) -> int:
    return sum(r for r, _ in BUDGETS.values()) + api_replicas + OTHERS


def workloads(pool: str, api_replicas: int) -> list[dict[str, Any]]:
    """What runs on one drained node: to_remove(api_replicas) pods to remove, 1 to keep."""
    node = NODES[pool]
    bare = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"debug-{pool}-{i}"},
             "spec": {**pod_spec(pool), "nodeName": node}} for i in range(2)]
    return [
        *budgeted("cache", pool), *budgeted("web", pool),
        deployment(f"api-{pool}", api_replicas, pool),
        deployment(f"scratch-{pool}", 2, pool, volumes=[{"name": "tmp", "emptyDir": {}}]),
        *bare,
    ]


def daemonset() -> dict[str, Any]:
    labels = {"app": "agent"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"bench": "yes"}, "terminationGracePeriodSeconds": GRACE,
                         "containers": [{"name": "agent", "image": IMAGE}]}}}}


def create(admin: Admin, namespace: str, obj: dict[str, Any]) -> None:
    group = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    plural = {"Deployment": "deployments", "DaemonSet": "daemonsets", "Pod": "pods",
              "PodDisruptionBudget": "poddisruptionbudgets"}[obj["kind"]]
    admin.create(f"{group}/namespaces/{namespace}/{plural}", obj)


def reset_node(admin: Admin, name: str, created: dict[str, str], schedulable: bool) -> None:
    """The node with the labels it was `created` with, without a drain's annotations,
    cordoned or not."""
    node = admin.node(name)
    labels: dict[str, str | None] = {k: None for k in node["metadata"].get("labels", {})}
    labels.update(created)
    annotations = {k: None for k in node["metadata"].get("annotations", {})
                   if k.startswith("berth.io/")}
    admin.call("PATCH", f"/api/v1/nodes/{name}", {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": {"unschedulable": None if schedulable else True}},
        content_type=MERGE).raise_for_status()


def on_node(admin: Admin, node: str, namespace: str) -> list[dict[str, Any]]:
    return [p for p in admin.pods_on(node) if p["metadata"]["namespace"] == namespace]


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions", []))


def set_up_run(admin: Admin, namespace: str, api_replicas: int,
               labels: dict[str, dict[str, str]]) -> None:
    """A fresh namespace whose pods all run on bench-a and bench-b, then spares opened."""
    for pool in NODES:
        reset_node(admin, NODES[pool], labels[NODES[pool]], schedulable=True)
        reset_node(admin, SPARES[pool], labels[SPARES[pool]], schedulable=False)
    admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": namespace}})
    create(admin, namespace, daemonset())
    for pool in NODES:
        for obj in workloads(pool, api_replicas):
            create(admin, namespace, obj)
    expected = to_remove(api_replicas) + 1

    def all_ready() -> bool:
        return all(len([p for p in on_node(admin, node, namespace) if ready(p)]) == expected
                   for node in NODES.values())

    def budgets_settled() -> bool:
        path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
        status = [(BUDGETS[name][0], admin.get(f"{path}/{name}-{pool}").get("status", {}))
                  for pool in NODES for name in BUDGETS]
        return all(s.get("currentHealthy") == n and s.get("disruptionsAllowed") == 1
                   for n, s in status)

    wait_for(f"{expected} Ready pods on each drained node", all_ready, timeout=120)
    wait_for("the PDBs' status from the disruption controller", budgets_settled)
    for pool in NODES:
        reset_node(admin, SPARES[pool], labels[SPARES[pool]], schedulable=True)


def tear_down_run(admin: Admin, namespace: str) -> None:
    admin.call("DELETE", f"/api/v1/namespaces/{namespace}").raise_for_status()
    wait_for(f"namespace {namespace} gone", lambda: admin.call(
        "GET", f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=120)


# -- counting ----------------------------------------------------------------------------
def audit_kinds(log: Path, user: str, since: float, until: float) -> Counter[str]:
    """The requests `user` made in [since, until], by kind, from the audit log."""
    seen: dict[str, dict[str, Any]] = {}
    with open(log, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("user", {}).get("username") != user:
                continue
            received = datetime.fromisoformat(
                event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            if since <= received <= until:
                seen[event["auditID"]] = event  # the last stage of each request wins
    return Counter(kind_of(e) for e in seen.values())


def kind_of(event: dict[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource")
    if not resource:
        return f"{event['verb']} {event['requestURI'].split('?')[0]}"
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    refused = " 429" if (event.get("responseStatus") or {}).get("code") == 429 else ""
    return f"{event['verb']} {resource}{refused}"


def measure(tool: str, run: int, node: str, drain: Any, user: str, log: Path,
            admin: Admin, namespace: str) -> Result:
    since = time.time()
    started = time.perf_counter()
    drain(node)
    seconds = time.perf_counter() - started
    until = time.time()
    left = [p["metadata"]["name"] for p in on_node(admin, node, namespace)
            if not p["metadata"]["name"].startswith("agent-")]
    if left or not admin.node(node)["spec"].get("unschedulable"):
        raise SystemExit(f"{tool} left {node} with pods {left} or schedulable")
    time.sleep(0.5)  # the audit log is written as requests complete
    return Result(tool, run, node, seconds, audit_kinds(log, user, since, until))


# -- main --------------------------------------------------------------------------------
def bench(opts: argparse.Namespace, work: Path) -> list[Result]:
    plane = start_plane(work, opts.ready_delay)
    promenade: Promenade | None = None
    try:
        admin = Admin(plane)
        namespace = apply_shipped_rbac(plane)
        labels = {name: admin.ready_node(name, pool=pool, bench="yes")["metadata"]["labels"]
                  for pool in NODES for name in (NODES[pool], SPARES[pool])}
        kubectl = make_kubectl(plane, admin, namespace, work)
        promenade = start_promenade(plane, namespace, work)
        tools = {"kubectl": (kubectl.drain, kubectl.user),
                 "promenade": (promenade.drain, promenade.user)}
        results: list[Result] = []
        for run in range(opts.runs):
            ns = f"run{run}"
            set_up_run(admin, ns, opts.api_replicas, labels)
            order = ["kubectl", "promenade"] if run % 2 == 0 else ["promenade", "kubectl"]
            for tool, pool in zip(order, ("a", "b"), strict=True):
                drain, user = tools[tool]
                results.append(measure(tool, run, NODES[pool], drain, user,
                                       work / "audit.log", admin, ns))
                print(f"run {run}: {tool:9} drained {NODES[pool]} in "
                      f"{results[-1].seconds:.2f} s, {results[-1].requests} requests",
                      flush=True)
            tear_down_run(admin, ns)
        return results
    finally:
        if promenade is not None:
            promenade.proc.stop()
        plane.stop()


def report(results: list[Result], opts: argparse.Namespace) -> None:
    print(f"\nDrain of one kwok node: {to_remove(opts.api_replicas)} pods to remove (cache x3"
          f" and web x4 each behind a PDB allowing 1 disruption, api x{opts.api_replicas}, "
          f"scratch x2 with emptyDir, 2 bare) and 1 DaemonSet pod; grace {GRACE} s, "
          f"replacements Ready {opts.ready_delay:g} s after scheduling")
    print(f"{'run':>3} {'tool':10} {'node':8} {'wall s':>7} {'requests':>8} {'evictions':>9} "
          f"{'429s':>5}")
    for r in results:
        evictions = sum(v for k, v in r.kinds.items() if k.startswith("create pods/eviction"))
        refused = sum(v for k, v in r.kinds.items() if k.endswith(" 429"))
        print(f"{r.run:>3} {r.tool:10} {r.node:8} {r.seconds:7.2f} {r.requests:8d} "
              f"{evictions:9d} {refused:5d}")
    medians = {}
    for tool in ("kubectl", "promenade"):
        mine = [r for r in results if r.tool == tool]
        medians[tool] = (statistics.median(r.seconds for r in mine),
                         statistics.median(r.requests for r in mine))
        print(f"median {tool:10} {medians[tool][0]:7.2f} s {medians[tool][1]:8.1f} requests")
    (ours_s, ours_n), (theirs_s, theirs_n) = medians["promenade"], medians["kubectl"]
    print(f"Promenade/kubectl: time x{ours_s / theirs_s:.2f}, requests x{ours_n / theirs_n:.2f}"
          f" (target: both <= 1)")
    for tool in ("kubectl", "promenade"):
        total: Counter[str] = Counter()
        for r in results:
            if r.tool == tool:
                total.update(r.kinds)
        runs = sum(1 for r in results if r.tool == tool)
        kinds = ", ".join(f"{k}={v / runs:g}" for k, v in sorted(total.items()))
        print(f"  {tool} requests per drain by kind: {kinds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4, help="runs (each drains both nodes)")
    parser.add_argument("--ready-delay", type=float, default=1.0,
                        help="seconds from scheduling until kwok makes a pod Ready")
    parser.add_argument("--api-replicas", type=int, default=12,
                        help="replicas on each drained node of the Deployment without a PDB")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-drain-"))
    results = bench(opts, work)
    report(results, opts)
    if opts.keep:
        print(f"work directory (audit log, component logs): {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
