"""Destroy one node alone, then every other node of the same simulated site in one
destroy_nodes task; print the large task's wall time against the lone node's (target: 200
nodes within 3x of one node alone, 1,000 within 5x), against its own slowest node, the
per-node median and maximum, and Drydock's CPU per node, for each size given.

    .venv/bin/python bench/destroy_scale.py [--nodes 200 --nodes 1000] [--runs 3] [--pool N]
                                            [--ipmi-every 10]

Each run starts a fresh site of N + 1 nodes and a fresh Drydock: a real `drydock-api`
process with its default settings (SQLite, one worker in the API process; only the database,
MAAS endpoint and auth are set; `--pool` overrides `[worker] node_pool_size`) against the
site's MAAS simulator, Redfish emulator and pyghmi IPMI BMCs; the site keeps its default
timings (graceful shutdown 1 s, power 0.5 s, release 0.5 s, MAAS erase 1 s). Drydock parses
the design once before anything is timed. The lone node is the site's first (Redfish) node.
The site runs without Kubernetes, which Drydock never calls (`--kubernetes` runs it too). A
node's own time runs from its first step starting to its last step ending (queueing left
out); a task's wall time from its POST to its completion as Drydock records it (the client
looks every 0.5 s, so its looks add little to the work). CPU is the Drydock process group's
user + system time over the task.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sitesim.generate import generate_site  # noqa: E402
from sitesim.site import Site  # noqa: E402
from sitesim.siteconfig import parse_site  # noqa: E402
from tests.support.services import ServiceProcess, write_tokens  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
POLL = 0.5  # the client looks at the task this often; its end is the one Drydock records


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def group_cpu(pgid: int) -> float:
    """User + system CPU seconds of the live processes of process group `pgid`."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ...
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine so far (every process: Drydock and the site)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK  # all but idle and iowait


def start_drydock(site: Site, work: Path, pool: int | None) -> tuple[ServiceProcess, str]:
    tokens = write_tokens(work / "tokens.yaml")
    (work / "design.yaml").write_text(site.design_yaml())
    sections: dict[str, dict[str, object]] = {
        "auth": {"strategy": "token", "token_file": work / "tokens.yaml"},
        "database": {"connection": f"sqlite:///{work}/drydock.db"},
        "logging": {"level": "WARNING"},
        "maas": {"url": site.urls["maas"], "api_key": site.spec.maas_api_key},
    }
    if pool is not None:
        sections["worker"] = {"node_pool_size": pool}
    api = ServiceProcess("drydock", work, sections)
    return api, tokens["admin"]


@dataclass
class Measured:
    nodes: int
    status: str
    failures: int
    wall: float
    cpu: float
    machine: float  # busy CPU of the whole machine over the task (Drydock and the site)
    times: list[tuple[float, str]]  # each node's own time, sorted
    calls: dict[str, float]  # Drydock's driver calls over the task, by driver.operation

    @property
    def median(self) -> float:
        return statistics.median(t for t, _ in self.times)

    @property
    def slowest(self) -> float:
        return self.times[-1][0]


def driver_calls(url: str) -> dict[str, float]:
    """Drydock's driver calls so far (its metrics), by driver.operation."""
    calls: dict[str, float] = {}
    for line in requests.get(f"{url}/metrics", timeout=60).text.splitlines():
        if line.startswith("berth_drydock_driver_call_seconds_count{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
            key = f"{labels.get('driver')}.{labels.get('operation')}"
            calls[key] = calls.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return calls


def destroy(api: ServiceProcess, token: str, href: str, names: list[str]) -> Measured:
    headers = {"X-Auth-Token": token}
    url = api.url
    calls = driver_calls(url)
    cpu, machine = group_cpu(api.proc.pid), machine_cpu()
    started = datetime.now(UTC)
    resp = requests.post(f"{url}/api/v1.0/tasks", headers=headers, timeout=60, json={
        "action": "destroy_nodes", "design_ref": href, "node_filter": {
            "filter_set_type": "union",
            "filter_set": [{"filter_type": "union", "node_names": names}]}})
    resp.raise_for_status()
    task_id = resp.json()["task_id"]
    while True:
        task = requests.get(f"{url}/api/v1.0/tasks/{task_id}", headers=headers,
                            timeout=60).json()
        if task["status"] in ("complete", "terminated"):
            break
        time.sleep(POLL)
    cpu, machine = group_cpu(api.proc.pid) - cpu, machine_cpu() - machine
    calls = {k: v - calls.get(k, 0.0) for k, v in driver_calls(url).items()
             if v > calls.get(k, 0.0)}
    wall = (datetime.fromisoformat(task["completed"]) - started).total_seconds()
    tree = requests.get(f"{url}/api/v1.0/tasks/{task_id}", params={"layers": -1},
                        headers=headers, timeout=120).json()
    top = tree[tree["init_task_id"]]
    tasks = [t for k, t in tree.items() if k != "init_task_id"]
    subs = [t for t in tasks if t.get("node") and not t.get("step")]
    first_step: dict[str, str] = {}
    for t in tasks:
        if t.get("step"):
            first_step[t["node"]] = min(first_step.get(t["node"], t["created"]), t["created"])
    times = sorted((seconds(first_step[t["node"]], t["completed"]), t["node"])
                   for t in subs if t.get("completed") and t["node"] in first_step)
    return Measured(len(subs), top["result"]["status"], len(top["result"]["failures"]),
                    wall, cpu, machine, times, calls)


def warm(api: ServiceProcess, token: str, href: str, names: list[str]) -> None:
    """Have Drydock parse the design once (a node filter answered from it) before anything is
    timed: its first parse of a 201-node design takes about 0.6 s, which would otherwise be
    counted in the lone node's time and flatter the ratio."""
    requests.post(f"{api.url}/api/v1.0/nodefilter", headers={"X-Auth-Token": token},
                  timeout=120, json={"design_ref": href, "node_filter": {
                      "filter_set_type": "union",
                      "filter_set": [{"filter_type": "union", "node_names": names}]}},
                  ).raise_for_status()


def one_run(nodes: int, racks: int, pool: int | None, ipmi_every: int,
            spy: str | None = None, kubernetes: bool = False) -> tuple[Measured, Measured]:
    raw = generate_site(nodes + 1, racks, 0, ipmi_every=ipmi_every)
    raw["workloads"] = False
    raw["kubernetes"] = kubernetes  # Drydock never calls it: off, it loads no core here
    names = [n["name"] for n in raw["nodes"]]
    site = Site(parse_site(raw)).start()
    work = Path(tempfile.mkdtemp(prefix="destroy-scale-"))
    api, token = start_drydock(site, work, pool)
    href = f"file://{work}/design.yaml"
    try:
        warm(api, token, href, names[:1])
        alone = destroy(api, token, href, names[:1])
        sampler = None
        if spy:  # py-spy samples Drydock's processes during the large task: the thread
            # holding the GIL, without stopping the process (a blocking sampler slowed the
            # 200-node destroy from 17 s to 121 s)
            sampler = subprocess.Popen(
                [shutil.which("py-spy") or "py-spy", "record", "--subprocesses", "--gil",
                 "--nonblocking", "--format", "raw", "--rate", "100", "--output", spy,
                 "--pid", str(api.proc.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        many = destroy(api, token, href, names[1:])
        if sampler is not None:
            sampler.send_signal(2)
            sampler.wait(timeout=60)
    finally:
        api.stop()
        site.stop()
    return alone, many


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(nodes: int, run: int, alone: Measured, many: Measured, target: float) -> None:
    print(f"[{nodes} nodes, run {run}] load {load()}  result: {many.status}  "
          f"failures: {many.failures} (lone node: {alone.status})")
    print(f"  one node alone: wall {alone.wall:.2f} s, own {alone.slowest:.2f} s, "
          f"Drydock CPU {alone.cpu:.2f} s")
    print(f"  {many.nodes} nodes: wall {many.wall:.2f} s, node median {many.median:.2f} s, "
          f"max {many.slowest:.2f} s ({many.times[-1][1]}), Drydock CPU {many.cpu:.1f} s "
          f"({many.cpu / many.nodes:.3f} s/node), the whole machine {many.machine:.1f} s "
          f"({many.machine / many.wall:.2f} of its {os.cpu_count()} cores)")
    print(f"  ratio to one node alone: {many.wall / alone.wall:.2f}x (target <= {target:g}x)"
          f"   ratio to its slowest node: {many.wall / many.slowest:.2f}x")
    print("  Drydock's driver calls per node, alone / in the large task: " + ", ".join(
        f"{k} {alone.calls.get(k, 0) / alone.nodes:.1f}/{many.calls.get(k, 0) / many.nodes:.1f}"
        for k in sorted(set(alone.calls) | set(many.calls))), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, action="append",
                        help="nodes in the large task (default: 200 and 1000)")
    parser.add_argument("--runs", type=int, default=1, help="runs per size (fresh site each)")
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--pool", type=int, default=None,
                        help="[worker] node_pool_size (default: the service's default)")
    parser.add_argument("--ipmi-every", type=int, default=10,
                        help="every Nth node has a pyghmi IPMI BMC (0: all Redfish)")
    parser.add_argument("--py-spy", metavar="FILE", default=None,
                        help="sample Drydock with py-spy (on PATH) during the large task "
                             "into FILE (collapsed stacks of the thread holding the GIL)")
    parser.add_argument("--kubernetes", action="store_true",
                        help="run the site's Kubernetes too (Drydock's destroy never calls "
                             "it; on a small machine its control plane and kubelets take CPU "
                             "the measured work would get)")
    opts = parser.parse_args()
    for nodes in opts.nodes or [200, 1000]:
        target = 3.0 if nodes <= 200 else 5.0
        results = []
        for run in range(1, opts.runs + 1):
            alone, many = one_run(nodes, opts.racks, opts.pool, opts.ipmi_every,
                                  opts.py_spy, opts.kubernetes)
            report(nodes, run, alone, many, target)
            results.append((alone, many))
        if len(results) > 1:
            ratios = sorted(m.wall / a.wall for a, m in results)
            print(f"[{nodes} nodes, {len(results)} runs] ratio to one node alone: median "
                  f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}); "
                  f"one node alone {min(a.wall for a, _ in results):.2f}-"
                  f"{max(a.wall for a, _ in results):.2f} s; {nodes} nodes "
                  f"{min(m.wall for _, m in results):.2f}-"
                  f"{max(m.wall for _, m in results):.2f} s; CPU/node "
                  f"{min(m.cpu / m.nodes for _, m in results):.3f}-"
                  f"{max(m.cpu / m.nodes for _, m in results):.3f} s", flush=True)


if __name__ == "__main__":
    main()
