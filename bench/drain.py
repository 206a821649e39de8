"""Drain one node with 110 pods by Promenade and by real `kubectl drain`; print time and requests.

Two identical simulated clusters (sitesim.kubeapi): node `bench01` runs 110 pods — ten
Deployments of ten replicas (three of them behind PodDisruptionBudgets that allow only a few
disruptions at a time), bare pods (some with emptyDir) and a DaemonSet pod; pods take a while
to terminate and replacements a while to become ready elsewhere. Both drains use a 5 s retry
after a 429, the spec's `--force --ignore-daemonsets --delete-emptydir-data` behaviour and the
same grace period. Every HTTP request the API server receives is counted.

    .venv/bin/python bench/drain.py [--termination-delay 0.5] [--recreate-delay 0.5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from sitesim.hooks import NullHooks
from sitesim.kubeapi import KubeCluster, KubeTimings, make_wsgi_app, write_kubeconfig
from sitesim.kubeapi.api import ListQuery
from sitesim.kubeapi.resources import BY_GROUP_PLURAL

NODE = "bench01"
OTHERS = ("bench02", "bench03")
PODS = BY_GROUP_PLURAL[("", "pods")]
GRACE = 1
TIMEOUT = 600


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class CountingHooks(NullHooks):
    """The simulator's own per-operation counts (what `/calls` reports on a site)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def record_call(self, system: str, op: str, node: str | None) -> None:
        self.calls[op] += 1


class RequestCounter:
    """WSGI middleware counting every request by method and first path segments."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.total = 0
        self.by_kind: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        kind = _kind(environ.get("REQUEST_METHOD", ""), path, environ.get("QUERY_STRING", ""))
        with self._lock:
            self.total += 1
            self.by_kind[kind] += 1
        return self.app(environ, start_response)


def _kind(method: str, path: str, query: str) -> str:
    parts = [p for p in path.split("/") if p]
    if "watch=true" in query or "watch=1" in query:
        return f"{method} watch"
    if parts[-1:] == ["eviction"]:
        return "POST eviction"
    for resource in ("pods", "nodes", "daemonsets", "leases"):
        if resource in parts:
            named = parts.index(resource) + 1 < len(parts)
            return f"{method} {resource[:-1] if named else resource}"
    return f"{method} discovery"


@dataclass
class Bench:
    cluster: KubeCluster
    counter: RequestCounter
    hooks: CountingHooks
    url: str
    stop: Callable[[], None]

    def pods_left(self) -> list[dict[str, Any]]:
        items = self.cluster.api.list(PODS, None, ListQuery(
            field_selector=f"spec.nodeName={NODE}"))["items"]
        return [p for p in items if not _is_daemonset_pod(p)]


def _is_daemonset_pod(pod: dict[str, Any]) -> bool:
    return any(r.get("kind") == "DaemonSet" for r in pod["metadata"].get("ownerReferences") or [])


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"application": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "bench", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"bench/pool": "yes"},
                         "containers": [{"name": name, "image": "busybox"}]}}}}


def _bare(name: str, empty_dir: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": NODE, "containers": [{"name": name, "image": "busybox"}]}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench"}, "spec": spec}


def build(termination: float, recreate: float) -> Bench:
    """A cluster whose node bench01 runs 110 pods; served with a request counter."""
    hooks = CountingHooks()
    cluster = KubeCluster(hooks, KubeTimings(
        pod_termination_delay=termination, recreate_delay=recreate,
        kubelet_shutdown_delay=0.1, not_ready_delay=0.1, controller_interval=0.05))
    cluster.add_node(NODE, {"bench/pool": "yes", "kubernetes.io/hostname": NODE})
    for name in OTHERS:
        cluster.add_node(name, {"kubernetes.io/hostname": name})
    cluster.start()
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
    cluster.apply({"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"name": "agent", "namespace": "kube-system"},
                   "spec": {"selector": {"matchLabels": {"application": "agent"}},
                            "template": {"metadata": {"labels": {"application": "agent"}},
                                         "spec": {"containers": [{"name": "a",
                                                                  "image": "busybox"}],
                                                  "tolerations": [{"operator": "Exists"}]}}}})
    for i in range(10):
        cluster.apply(_deployment(f"app{i}", 10))
    for i in range(3):  # PDBs that allow three disruptions at a time
        cluster.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                       "metadata": {"name": f"app{i}", "namespace": "bench"},
                       "spec": {"minAvailable": 7,
                                "selector": {"matchLabels": {"application": f"app{i}"}}}})
    for i in range(9):
        cluster.apply(_bare(f"bare{i}", empty_dir=i % 3 == 0))
    _wait(lambda: len(_ready(cluster)) == 110, "110 ready pods on bench01")
    for name in OTHERS:  # replacements may now go elsewhere
        cluster.add_node(name, {"kubernetes.io/hostname": name, "bench/pool": "yes"})
    counter = RequestCounter(make_wsgi_app(cluster))
    server = make_server("127.0.0.1", 0, counter, threaded=True,
                         request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        cluster.stop()

    hooks.calls.clear()
    return Bench(cluster, counter, hooks, f"http://127.0.0.1:{server.port}", stop)


def _ready(cluster: KubeCluster) -> list[dict[str, Any]]:
    items = cluster.api.list(PODS, None, ListQuery(field_selector=f"spec.nodeName={NODE}"))
    return [p for p in items["items"] if (p.get("status") or {}).get("phase") == "Running"]


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench setup: timed out waiting for {what}")
        time.sleep(0.05)


def drain_with_promenade(bench: Bench) -> None:
    from promenade_api.kube.client import KubeClient, load_api_client
    from promenade_api.kube.drain import Drainer, DrainSettings

    kube = KubeClient(load_api_client(api_url=bench.url), request_timeout=30)
    Drainer(kube, DrainSettings(retry_delay=5.0), clock=time.monotonic,
            sleep=time.sleep).run(NODE, TIMEOUT, GRACE)


def drain_with_kubectl(bench: Bench, kubectl: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-kubectl-"))
    try:
        config = write_kubeconfig(work / "kubeconfig", bench.url)
        env = dict(os.environ, KUBECONFIG=str(config), KUBECACHEDIR=str(work / "cache"),
                   HOME=str(work))
        result = subprocess.run(
            [kubectl, "drain", NODE, "--force", "--ignore-daemonsets",
             "--delete-emptydir-data", f"--timeout={TIMEOUT}s", f"--grace-period={GRACE}"],
            env=env, capture_output=True, text=True, check=False, timeout=TIMEOUT + 60)
        if result.returncode != 0:
            raise SystemExit(f"kubectl drain failed:\n{result.stderr[-2000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(name: str, drain: Callable[[Bench], None], opts: argparse.Namespace) -> dict[str, Any]:
    bench = build(opts.termination_delay, opts.recreate_delay)
    try:
        before = bench.counter.total
        started = time.perf_counter()
        drain(bench)
        elapsed = time.perf_counter() - started
        left = bench.pods_left()
        return {"name": name, "seconds": elapsed, "requests": bench.counter.total - before,
                "by_kind": dict(bench.counter.by_kind), "hooks": dict(bench.hooks.calls),
                "left": len(left)}
    finally:
        bench.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--termination-delay", type=float, default=0.5,
                        help="seconds a deleted pod takes to terminate")
    parser.add_argument("--recreate-delay", type=float, default=0.5,
                        help="seconds before a controller's replacement pod is ready")
    parser.add_argument("--kubectl", default=shutil.which("kubectl") or "/usr/bin/kubectl")
    opts = parser.parse_args()
    results = [run("promenade", drain_with_promenade, opts)]
    if os.access(opts.kubectl, os.X_OK):
        results.append(run("kubectl", lambda b: drain_with_kubectl(b, opts.kubectl), opts))
    else:
        print(f"kubectl not found at {opts.kubectl}; only Promenade was measured")
    print(f"Drain of {NODE}: 110 pods (100 in Deployments, 30 behind PDBs, 9 bare, 1 DaemonSet)")
    print(f"{'':10} {'wall s':>8} {'requests':>9} {'evictions':>10} {'pods left':>10}")
    for r in results:
        print(f"{r['name']:10} {r['seconds']:8.2f} {r['requests']:9d} "
              f"{r['by_kind'].get('POST eviction', 0):10d} {r['left']:10d}")
    if len(results) == 2:
        ours, theirs = results
        print(f"Target: Promenade no slower ({ours['seconds'] <= theirs['seconds']}) and no "
              f"more requests ({ours['requests'] <= theirs['requests']}) than kubectl")
    for r in results:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(r["by_kind"].items()))
        print(f"  {r['name']} requests by kind: {kinds}")
        print(f"  {r['name']} simulator hook counts: "
              + ", ".join(f"{k}={v}" for k, v in sorted(r["hooks"].items())))


if __name__ == "__main__":
    main()
