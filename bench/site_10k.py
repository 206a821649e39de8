"""A 10,000-node site under the three services: what Drydock answers about it, and memory.

Starts a generated site (`berth up --nodes N` does the same on the standard ports; here every
port is free) and the three services with the configuration `berth up` writes (the services'
defaults plus the site's endpoints), commits the design in Shipyard, then prints:

- `GET /nodes` of Drydock over every node (the first call fetches and parses the design;
  the median and the worst of the next `--repeat`, `--gap` seconds apart, are the figures;
  target <= 300 ms),
- `POST /nodefilter` selecting among all nodes (racks x tag; target <= 100 ms),
- an idle reboot-reconciler pass with a node record for every node (run in a process of its own on
  Drydock's database with Drydock's code; target <= 50 ms),
- resident memory of each service (gunicorn master plus workers) and of the simulated site.

The site runs on the real control plane (a generated large site has Kubernetes' own node lease
and monitor periods, 40/5/50 s); the bench stops with the figures it saw if the Nodes and
their DaemonSet pods are not all Ready within `--up-limit` seconds.

    .venv/bin/python bench/site_10k.py [--nodes 10000] [--racks 100] [--repeat 10]
        [--kube-timings 40/5/50] [--up-limit 1200]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from scale_probe import (
    drydock_filter,
    drydock_nodes,
    kube_timings,
    processes,
    rss_mb,
    wait_until_up,
)
from sqlalchemy import insert

from berth_launcher.berthconfig import SERVICES
from berth_launcher.up import Up
from drydock_api import config as drydock_config
from drydock_api.db.models import NodeRecord
from drydock_api.runtime import build_runtime
from sitesim.generate import generate_site
from sitesim.ports import free_port
from sitesim.site import SitePorts
from sitesim.siteconfig import parse_site


def reconciler_pass(conf_file: Path, names: list[str], repeat: int) -> tuple[float, float]:
    """Median and worst idle pass (ms) with a node record for every node (run in a process
    of its own, like the timed calls)."""
    conf = drydock_config.load(str(conf_file))
    runtime = build_runtime(conf, migrate=False)
    try:
        with runtime.store.engine.begin() as conn:
            conn.execute(insert(NodeRecord), [
                {"name": n, "retired": False, "torn_down": False, "updated": time.time(),
                 "power_state": "on"} for n in names])
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            acted = runtime.reconciler.pass_once()
            times.append((time.perf_counter() - started) * 1000)
            assert acted == 0
        return statistics.median(times), max(times)
    finally:
        runtime.store.engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--racks", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.25,
                        help="seconds between timed calls (50 x 0.25 s spans a MAAS listing "
                             "refresh)")
    parser.add_argument("--kube-timings", default="",
                        help="LEASE/PERIOD/GRACE seconds of kwok's node lease and the "
                             "node-lifecycle controller (default: the generated site's, "
                             "Kubernetes' own 40/5/50 for a large site)")
    parser.add_argument("--up-limit", type=float, default=1200.0,
                        help="seconds to wait for every Node Ready and its DaemonSet pod before "
                             "giving up")
    opts = parser.parse_args()
    raw = generate_site(opts.nodes, opts.racks, 3)
    if opts.kube_timings:
        raw["timings"]["kube"] = kube_timings(opts.kube_timings)
    spec = parse_site(raw)
    work = Path(tempfile.mkdtemp(prefix="site-10k-"))
    ports = {name: free_port() for name in SERVICES}
    started = time.perf_counter()
    up = Up(spec, work, SitePorts(), with_services=False, service_ports=ports)
    try:
        up.start()
        print(f"site of {len(spec.nodes)} nodes ({len(up.site.ipmi_ports)} IPMI BMCs, the rest "
              f"Redfish on one endpoint) started: {time.perf_counter() - started:.1f} s",
              flush=True)
        nodes_s, pods_s = wait_until_up(up.site, len(spec.nodes), opts.up_limit)
        print(f"every Node Ready {nodes_s:.1f} s later, every node-agent pod Ready "
              f"{pods_s:.1f} s later", flush=True)
        processes(up.site, 10.0)
        up.with_services = True
        up._start_services()  # the services on the running site, as Up.start() does
        env = up.env
        print(f"the services up, design committed: {time.perf_counter() - started:.1f} s "
              f"from the start", flush=True)
        measure(env, work, [n.name for n in spec.nodes], opts)
        for name, proc in up.procs.items():
            print(f"resident memory {name}: {rss_mb(proc.pid):.0f} MB")
        print(f"resident memory simulated site (this process): "
              f"{rss_mb('self', children=False):.0f} MB")
    finally:
        up.stop()


def measure(env: dict[str, str], work: Path, names: list[str], opts: Any) -> None:
    drydock_nodes(env, opts.repeat, opts.gap)
    racks = sorted({f"rack{i + 1:02d}" for i in range(0, opts.racks, 2)})
    drydock_filter(env, {"rack_names": racks, "node_tags": ["compute"]}, opts.repeat, opts.gap,
                   len(names))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        median, worst = child.submit(reconciler_pass, work / "drydock.conf", names,
                                     opts.repeat * 2).result()
    print(f"idle reboot-reconciler pass, {len(names)} node records: {median:.1f} ms median "
          f"(worst {worst:.1f} ms) target <= 50 ms", flush=True)


if __name__ == "__main__":
    main()
