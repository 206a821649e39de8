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

    .venv/bin/python bench/site_10k.py [--nodes 10000] [--racks 100] [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

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


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (gunicorn workers), in MB."""
    total = 0.0
    with open(f"/proc/{pid}/status") as status:
        total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        total += sum(rss_mb(int(child)) * 1024 for child in children)
    return total / 1024


# The calls are timed from a process of their own: this one also runs the simulated site, whose
# MAAS holds the interpreter for a second while it writes its 10,000-machine listing (every
# `listing_max_age`), which would be counted against Drydock.
CLIENT = """
import json, statistics, sys, time
import requests
method, url, headers, body, repeat, gap = json.loads(sys.argv[1])
session, times, found = requests.Session(), [], None
for _ in range(repeat):
    started = time.perf_counter()
    resp = session.request(method, url, headers=headers, json=body, timeout=600)
    times.append((time.perf_counter() - started) * 1000)
    resp.raise_for_status()
    found = resp.json()
    time.sleep(gap)
print(json.dumps([statistics.median(times), max(times), len(found)]))
"""


def timed(method: str, url: str, headers: dict[str, str], body: Any, repeat: int,
          gap: float = 0.0) -> tuple[float, float, int]:
    """Median and worst wall time (ms) of `repeat` calls `gap` seconds apart, made from another
    process, and the length of the last body."""
    args = json.dumps([method, url, headers, body, repeat, gap])
    out = subprocess.run([sys.executable, "-c", CLIENT, args], capture_output=True, text=True,
                         check=True).stdout
    median, worst, length = json.loads(out)
    return float(median), float(worst), int(length)


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
    opts = parser.parse_args()
    spec = parse_site(generate_site(opts.nodes, opts.racks, 3))
    work = Path(tempfile.mkdtemp(prefix="site-10k-"))
    ports = {name: free_port() for name in SERVICES}
    started = time.perf_counter()
    up = Up(spec, work, SitePorts(), service_ports=ports)
    try:
        env = up.start()
        print(f"site of {len(spec.nodes)} nodes ({len(up.site.ipmi_ports)} IPMI BMCs, the rest "
              f"Redfish on one endpoint) and the services up, design committed: "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        measure(env, work, [n.name for n in spec.nodes], opts)
        for name, proc in up.procs.items():
            print(f"resident memory {name}: {rss_mb(proc.pid):.0f} MB")
        print(f"resident memory simulated site (this process): {rss_mb_self():.0f} MB")
    finally:
        up.stop()


def rss_mb_self() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def measure(env: dict[str, str], work: Path, names: list[str], opts: Any) -> None:
    url, ref = f"{env['DRYDOCK_URL']}/api/v1.0", env["DESIGN_REF"]
    headers = {"X-Auth-Token": env["BERTH_TOKEN"]}
    nodes_url = f"{url}/nodes?design_ref={quote(ref, safe='')}"
    cold, _, _ = timed("GET", nodes_url, headers, None, 1)
    median, worst, listed = timed("GET", nodes_url, headers, None, opts.repeat, opts.gap)
    print(f"GET /nodes ({listed} nodes): {median:.0f} ms median of {opts.repeat} over "
          f"{opts.repeat * opts.gap:.0f} s (worst {worst:.0f} ms; first call, fetching and "
          f"parsing the design: {cold:.0f} ms) target <= 300 ms", flush=True)
    racks = sorted({f"rack{i + 1:02d}" for i in range(0, opts.racks, 2)})
    body = {"design_ref": ref, "node_filter": {"filter_set_type": "union", "filter_set": [
        {"filter_type": "intersection", "rack_names": racks, "node_tags": ["compute"]}]}}
    median, worst, chosen = timed("POST", f"{url}/nodefilter", headers, body, opts.repeat,
                                  opts.gap)
    print(f"POST /nodefilter over {len(names)} nodes ({chosen} selected): {median:.0f} ms "
          f"median (worst {worst:.0f} ms) target <= 100 ms", flush=True)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        median, worst = child.submit(reconciler_pass, work / "drydock.conf", names,
                                     opts.repeat * 2).result()
    print(f"idle reboot-reconciler pass, {len(names)} node records: {median:.1f} ms median "
          f"(worst {worst:.1f} ms) target <= 50 ms", flush=True)


if __name__ == "__main__":
    main()
