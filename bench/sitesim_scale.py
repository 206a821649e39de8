"""A large generated site on the real control plane: time to up, memory and CPU of each
process, the admin API's GET /nodes, then Drydock's GET /nodes and a 100-node filter over it.

Starts `sitesim generate`'s site (kube-apiserver, controller-manager, scheduler and kwok, one
Node per server) without the services, waits until every Node is Ready and every node-agent
DaemonSet pod Ready, prints each process's resident memory and its CPU over an idle
`--idle` seconds, times the sitesim admin API, then starts the three services on the site as
`berth up` does (bench/site_10k.py's way), commits the design and times Drydock.

    .venv/bin/python bench/sitesim_scale.py [--nodes 1000] [--racks 20] [--etcd-members 3]
        [--kube-timings 40/5/50] [--repeat 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
from scale_probe import (
    drydock_filter,
    drydock_nodes,
    kube_timings,
    processes,
    rss_mb,
    wait_until_up,
)

from berth_launcher.berthconfig import SERVICES
from berth_launcher.up import Up
from sitesim.generate import generate_site
from sitesim.ports import free_port
from sitesim.site import Site, SitePorts
from sitesim.siteconfig import parse_site


def admin_nodes(site: Site, names: list[str], repeat: int) -> None:
    url, times = site.urls["sitesim"] + "/nodes", []
    session = requests.Session()
    for _ in range(repeat):
        started = time.perf_counter()
        listed = session.get(url, timeout=600).json()
        times.append((time.perf_counter() - started) * 1000)
    one = []
    for name in names:
        started = time.perf_counter()
        session.get(f"{url}/{name}", timeout=30).raise_for_status()
        one.append((time.perf_counter() - started) * 1000)
    print(f"sitesim GET /nodes ({len(listed)} nodes): {statistics.median(times):.0f} ms median "
          f"of {repeat} (worst {max(times):.0f} ms); GET /nodes/<name>: "
          f"{statistics.median(one):.1f} ms", flush=True)


def hundred_nodes(spec: Any) -> dict[str, Any]:
    """A node filter entry of whole racks selecting about 100 nodes."""
    racks = sorted({n.rack for n in spec.nodes})
    per_rack = len(spec.nodes) / len(racks)
    return {"rack_names": racks[:max(1, math.ceil(100 / per_rack))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--racks", type=int, default=20)
    parser.add_argument("--etcd-members", type=int, default=3)
    parser.add_argument("--kube-timings", default="",
                        help="LEASE/PERIOD/GRACE seconds: kwok's node lease, the node-lifecycle "
                             "controller's period and grace (default: the generated site's, "
                             "Kubernetes' own 40/5/50 from 200 nodes, else the site's 8/2/16)")
    parser.add_argument("--idle", type=float, default=10.0,
                        help="seconds over which each process's idle CPU is measured")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.25)
    parser.add_argument("--up-limit", type=float, default=900.0)
    opts = parser.parse_args()
    raw = generate_site(opts.nodes, opts.racks, opts.etcd_members)
    if opts.kube_timings:
        raw["timings"]["kube"] = kube_timings(opts.kube_timings)
    spec = parse_site(raw)
    deployed = sum(n.state == "deployed" for n in spec.nodes)
    work = Path(tempfile.mkdtemp(prefix="sitesim-scale-"))
    up = Up(spec, work, SitePorts(), with_services=False,
            service_ports={name: free_port() for name in SERVICES})
    started = time.perf_counter()
    try:
        up.start()
        site_s = time.perf_counter() - started
        nodes_s, pods_s = wait_until_up(up.site, deployed, opts.up_limit)
        timings = "/".join(str(round(v)) for v in spec.timings.kube.values())
        print(f"site of {len(spec.nodes)} nodes ({opts.etcd_members} etcd members, "
              f"{len(up.site.ipmi_ports)} IPMI BMCs) on the real control plane, node lease/"
              f"monitor period/grace {timings or '8/2/16 (the site default)'} s:", flush=True)
        print(f"  site started: {site_s:.1f} s; every Node Ready: {site_s + nodes_s:.1f} s; "
              f"every node-agent pod Ready: {site_s + pods_s:.1f} s", flush=True)
        processes(up.site, opts.idle)
        admin_nodes(up.site, [spec.nodes[0].name, spec.nodes[len(spec.nodes) // 2].name],
                    max(3, opts.repeat // 4))
        started = time.perf_counter()
        up.with_services = True
        up._start_services()  # the services on the running site, as Up.start() does
        env = up.env
        print(f"services up, design committed: {time.perf_counter() - started:.1f} s",
              flush=True)
        drydock_nodes(env, opts.repeat, opts.gap)
        drydock_filter(env, hundred_nodes(spec), opts.repeat, opts.gap, len(spec.nodes))
        for name, proc in up.procs.items():
            print(f"resident memory {name}: {rss_mb(proc.pid):.0f} MB", flush=True)
    finally:
        up.stop()


if __name__ == "__main__":
    main()
