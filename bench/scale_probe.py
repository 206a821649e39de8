"""What the scale benches share: resident memory of processes, and Drydock's answers about a
large site (GET /nodes, a node filter) timed from a process of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sitesim.site import Site

DAEMONSET = "/apis/apps/v1/namespaces/kube-system/daemonsets/node-agent"


def rss_mb(pid: int | str, children: bool = True) -> float:
    """Resident memory of a process (and, with `children`, of its children, e.g. gunicorn
    workers), in MB."""
    with open(f"/proc/{pid}/status") as status:
        total = float(next(int(line.split()[1]) for line in status
                           if line.startswith("VmRSS:")))
    if children:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids = (task / "children").read_text().split()
            total += sum(rss_mb(int(kid)) * 1024 for kid in kids)
    return total / 1024


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime, stime in clock ticks (100/s)


# The calls are timed from a process of their own: the bench's process also runs the simulated
# site, whose MAAS holds the interpreter while it writes its machine listing (every
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


def drydock_nodes(env: dict[str, str], repeat: int, gap: float) -> None:
    """Print Drydock's GET /nodes over the design: the first call (fetching and parsing the
    design), then the median and worst of `repeat` more."""
    url = f"{env['DRYDOCK_URL']}/api/v1.0/nodes?design_ref={quote(env['DESIGN_REF'], safe='')}"
    headers = {"X-Auth-Token": env["BERTH_TOKEN"]}
    cold, _, _ = timed("GET", url, headers, None, 1)
    median, worst, listed = timed("GET", url, headers, None, repeat, gap)
    print(f"Drydock GET /nodes ({listed} nodes): {median:.0f} ms median of {repeat} over "
          f"{repeat * gap:.0f} s (worst {worst:.0f} ms; first call, fetching and parsing the "
          f"design: {cold:.0f} ms) target <= 300 ms", flush=True)


def drydock_filter(env: dict[str, str], entry: dict[str, Any], repeat: int, gap: float,
                   among: int) -> int:
    """Print Drydock's POST /nodefilter of one intersection `entry` (median and worst of
    `repeat` calls); returns how many nodes it selected."""
    body = {"design_ref": env["DESIGN_REF"], "node_filter": {
        "filter_set_type": "union", "filter_set": [{"filter_type": "intersection", **entry}]}}
    median, worst, chosen = timed("POST", f"{env['DRYDOCK_URL']}/api/v1.0/nodefilter",
                                  {"X-Auth-Token": env["BERTH_TOKEN"]}, body, repeat, gap)
    print(f"Drydock POST /nodefilter over {among} nodes ({chosen} selected): {median:.0f} ms "
          f"median (worst {worst:.0f} ms) target <= 100 ms", flush=True)
    return chosen


def kube_timings(text: str) -> dict[str, int]:
    """`LEASE/PERIOD/GRACE` seconds -> the site's timings.kube (empty: the site's defaults)."""
    if not text:
        return {}
    lease, period, grace = (int(part) for part in text.split("/"))
    return {"node_lease_duration_s": lease, "node_monitor_period_s": period,
            "node_monitor_grace_period_s": grace}


def wait_until_up(site: Site, deployed: int, limit: float) -> tuple[float, float]:
    """Seconds (from now) until every Node is Ready, and until the node-agent DaemonSet has a
    Ready pod on each; exits with what it saw after `limit` seconds."""
    assert site.kube is not None
    api, started = site.kube.api, time.perf_counter()
    nodes_at = pods_at = 0.0
    ready = pods = 0
    while not (nodes_at and pods_at):
        if time.perf_counter() - started > limit:
            raise SystemExit(f"not up within {limit:.0f} s: {ready} of {deployed} Nodes Ready, "
                             f"{pods} node-agent pods Ready; load average "
                             f"{os.getloadavg()[0]:.1f}")
        if not nodes_at:
            items = api.call("GET", "/api/v1/nodes").json()["items"]
            ready = sum(any(c["type"] == "Ready" and c["status"] == "True"
                            for c in n["status"].get("conditions") or []) for n in items)
            if ready >= deployed:
                nodes_at = time.perf_counter() - started
        if not pods_at:
            pods = ((api.get(DAEMONSET) or {}).get("status") or {}).get("numberReady", 0)
            if pods >= deployed:
                pods_at = time.perf_counter() - started
        time.sleep(1.0)
    return nodes_at, pods_at


def process_name(pid: int) -> str:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    name = os.path.basename(args[0].decode())
    if name == "etcd" and b"--name" in args:
        member = args[args.index(b"--name") + 1].decode()
        return "etcd (the apiserver's)" if member == "kube" else f"etcd member {member}"
    return name


def processes(site: Site, idle: float) -> None:
    """Resident memory and idle CPU of each of the site's processes (ipmi_sim summed)."""
    pids = {pid: process_name(pid) for pid in site.pids()} | {os.getpid(): "site (Python)"}
    before = {pid: cpu_seconds(pid) for pid in pids}
    time.sleep(idle)
    grouped: dict[str, list[tuple[float, float]]] = {}
    for pid, name in pids.items():
        cpu = (cpu_seconds(pid) - before[pid]) / idle * 100
        grouped.setdefault(name, []).append((rss_mb(pid, children=False), cpu))
    for name, figures in grouped.items():
        memory, cpu = sum(f[0] for f in figures), sum(f[1] for f in figures)
        count = f" x{len(figures)}" if len(figures) > 1 else ""
        print(f"  {name}{count}: {memory:.0f} MB resident, {cpu:.0f}% of a core idle",
              flush=True)
    if "ipmi_sim" not in grouped:
        print("  ipmi_sim: none (the generated site's IPMI BMCs are pyghmi, in the site's "
              "process)", flush=True)
    total = sum(rss_mb(pid, children=False) for pid in pids)
    print(f"  all: {total:.0f} MB; load average {os.getloadavg()[0]:.2f}", flush=True)
