"""Destroy every node of a large simulated site in one destroy_nodes task; print the wall
time beside the slowest single node's time (targets: 200 nodes within 1.5x of it, 1,000
within 2x), for each size given.

    .venv/bin/python bench/destroy_scale.py [--nodes 200 --nodes 1000] [--pool N] [--ipmi-every 10]

Drydock runs as a real `drydock-api` process with its default settings (only the database,
MAAS endpoint and auth are set; `--pool` overrides `[worker] node_pool_size`) against the
site's MAAS simulator, Redfish emulator and pyghmi IPMI BMCs; the site keeps its default
timings (graceful shutdown 1 s, power 0.5 s, release 0.5 s, MAAS erase 1 s). A node's own
time runs from its first step starting to its last step ending (queueing left out).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sitesim.generate import generate_site  # noqa: E402
from sitesim.site import Site  # noqa: E402
from sitesim.siteconfig import parse_site  # noqa: E402
from tests.support.services import ServiceProcess, write_tokens  # noqa: E402


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


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


def run(url: str, token: str, href: str) -> tuple[float, dict[str, Any]]:
    headers = {"X-Auth-Token": token}
    started = time.perf_counter()
    resp = requests.post(f"{url}/api/v1.0/tasks", headers=headers, timeout=60, json={
        "action": "destroy_nodes", "design_ref": href, "node_filter": None,
        "options": {"all_nodes": True}})
    resp.raise_for_status()
    task_id = resp.json()["task_id"]
    while True:
        task = requests.get(f"{url}/api/v1.0/tasks/{task_id}", headers=headers,
                            timeout=60).json()
        if task["status"] in ("complete", "terminated"):
            break
        time.sleep(0.1)
    wall = time.perf_counter() - started
    tree = requests.get(f"{url}/api/v1.0/tasks/{task_id}", params={"layers": -1},
                        headers=headers, timeout=120).json()
    return wall, tree


def destroy(nodes: int, racks: int, pool: int | None, ipmi_every: int, target: float) -> None:
    raw = generate_site(nodes, racks, 0, ipmi_every=ipmi_every)
    raw["workloads"] = False
    site = Site(parse_site(raw)).start()
    work = Path(tempfile.mkdtemp(prefix="destroy-scale-"))
    api, token = start_drydock(site, work, pool)
    try:
        wall, tree = run(api.url, token, f"file://{work}/design.yaml")
        top = tree[tree["init_task_id"]]
        tasks = [t for k, t in tree.items() if k != "init_task_id"]
        subs = [t for t in tasks if t.get("node") and not t.get("step")]
        first_step: dict[str, str] = {}
        for t in tasks:
            if t.get("step"):
                first_step[t["node"]] = min(first_step.get(t["node"], t["created"]),
                                            t["created"])
        times = sorted((seconds(first_step[t["node"]], t["completed"]), t["node"])
                       for t in subs if t.get("completed") and t["node"] in first_step)
        slowest, name = times[-1]
        print(f"nodes: {len(subs)}  result: {top['result']['status']}  "
              f"failures: {len(top['result']['failures'])}  "
              f"node pool: {pool if pool is not None else 'default'}")
        print(f"  wall time: {wall:.2f} s   slowest node: {slowest:.2f} s ({name})   "
              f"median node: {times[len(times) // 2][0]:.2f} s   "
              f"ratio: {wall / slowest:.2f}x (target <= {target:g}x)", flush=True)
    finally:
        api.stop()
        site.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, action="append",
                        help="site sizes (default: 200 and 1000)")
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--pool", type=int, default=None,
                        help="[worker] node_pool_size (default: the service's default)")
    parser.add_argument("--ipmi-every", type=int, default=10,
                        help="every Nth node has a pyghmi IPMI BMC (0: all Redfish)")
    opts = parser.parse_args()
    for nodes in opts.nodes or [200, 1000]:
        destroy(nodes, opts.racks, opts.pool, opts.ipmi_every, 1.5 if nodes <= 200 else 2.0)


if __name__ == "__main__":
    main()
