"""Run the simulated Kubernetes API on its own: `python -m sitesim.kubeapi --demo`."""

from __future__ import annotations

import argparse
import signal
import threading

from sitesim.hooks import NullHooks
from sitesim.kubeapi.cluster import KubeCluster
from sitesim.kubeapi.seed import seed_workloads
from sitesim.kubeapi.server import serve, write_kubeconfig
from sitesim.kubeapi.state import KubeTimings


def main(argv: list[str] | None = None) -> None:
    """Serve a cluster (optionally the demo nodes and workloads) until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m sitesim.kubeapi")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--kubeconfig", default=".berth/kubeconfig")
    parser.add_argument("--demo", action="store_true",
                        help="add node01-03 (control) and node04-06 (compute) with workloads")
    args = parser.parse_args(argv)
    cluster = KubeCluster(NullHooks(), KubeTimings())
    if args.demo:
        control, compute = ["node01", "node02", "node03"], ["node04", "node05", "node06"]
        for name in control:
            cluster.add_node(name, {"kubernetes-etcd": "enabled", "kubernetes-apiserver":
                                    "enabled", "ucp-control-plane": "enabled"},
                             control_plane=True)
        for name in compute:
            cluster.add_node(name, {"openstack-compute-node": "enabled"})
        seed_workloads(cluster, control, compute)
    cluster.start()
    server = serve(cluster, args.host, args.port)
    path = write_kubeconfig(args.kubeconfig, server.url)
    print(f"Kubernetes API on {server.url}; export KUBECONFIG={path.resolve()}", flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.shutdown()
    cluster.stop()


if __name__ == "__main__":
    main()
