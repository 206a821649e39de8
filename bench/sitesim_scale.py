"""Start a large simulated site and print its start-up time and resident memory.

    .venv/bin/python bench/sitesim_scale.py [--nodes 500] [--racks 20] [--etcd-members 3]
"""

from __future__ import annotations

import argparse
import resource
import time

import requests

from sitesim.generate import generate_site
from sitesim.site import Site
from sitesim.siteconfig import parse_site


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--racks", type=int, default=20)
    parser.add_argument("--etcd-members", type=int, default=3)
    opts = parser.parse_args()
    spec = parse_site(generate_site(opts.nodes, opts.racks, opts.etcd_members))
    before = rss_mb()
    started = time.perf_counter()
    site = Site(spec).start()
    elapsed = time.perf_counter() - started
    try:
        t0 = time.perf_counter()
        nodes = requests.get(site.urls["sitesim"] + "/nodes", timeout=60).json()
        list_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for name in (spec.nodes[0].name, spec.nodes[len(spec.nodes) // 2].name):
            requests.get(f"{site.urls['sitesim']}/nodes/{name}", timeout=10).raise_for_status()
        one_ms = (time.perf_counter() - t0) / 2 * 1000
        print(f"nodes: {len(nodes)}  redfish: {sum(n.bmc.type == 'redfish' for n in spec.nodes)}"
              f"  ipmi: {len(site.ipmi_ports)}  etcd members: {opts.etcd_members}")
        print(f"start-up: {elapsed:.2f} s")
        children = sum(rss_mb(pid) for pid in site.pids())
        print(f"resident memory: {rss_mb():.0f} MB in-process (before start: {before:.0f} MB)"
              f" + {children:.0f} MB in {len(site.pids())} etcd/ipmi_sim processes")
        print(f"GET /nodes ({len(nodes)} nodes): {list_s * 1000:.0f} ms;"
              f" GET /nodes/<name>: {one_ms:.1f} ms")
    finally:
        site.stop()


if __name__ == "__main__":
    main()
