"""Deployment strategies at scale: the time to plan a large site, and the orchestration overhead.

1. Planning: 1,000 and 10,000 nodes in 100 and 1,000 groups (every group depends on up to
   three earlier ones and selects nodes by rack, tag and label). Timed (median of --repeat):
   check and parse the strategy, index the nodes, select every group's nodes, order the
   groups, build the state machine.
2. Orchestration (pure): the same plan driven to the end against an instant in-memory Drydock
   (every call answered at once, 1% of nodes failing): the state machine's own cost.
3. Orchestration through Shipyard's workflow engine (when present): a 1,000-node site in 20
   groups run as a deploy_site baremetal step on the real engine and an SQLite action store,
   against a fake Drydock whose tasks finish on the next poll; wall time minus the simulated
   task time is the overhead.

Figures are printed, never asserted.

    .venv/bin/python bench/deploy_site_scale.py [--nodes 10000 --groups 1000] [--no-engine]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from shipyard_api.strategy.checks import check_strategy
from shipyard_api.strategy.model import parse_strategy
from shipyard_api.strategy.progress import Deployment
from shipyard_api.strategy.selectors import NodeIndex, NodeInfo

TARGETS = {(10_000, 100): 15, (10_000, 1_000): 150}  # ms, issue 19
REF = {"schema": "shipyard/DeploymentStrategy/v1", "name": "deployment-strategy"}


def site_nodes(count: int, racks: int, rng: random.Random) -> list[NodeInfo]:
    roles = ["compute", "storage", "control", "monitoring"]
    return [NodeInfo(f"node{i:05d}", (roles[i % 4], f"gen{i % 3}"), f"rack{i % racks:04d}",
                     {"zone": f"z{rng.randrange(4)}", "role": roles[i % 4]})
            for i in range(count)]


def strategy_data(groups: int, racks: int, rng: random.Random) -> dict[str, Any]:
    out = []
    for g in range(groups):
        deps = sorted({f"group{rng.randrange(g):04d}" for _ in range(rng.randrange(4))}) \
            if g else []
        rack = f"rack{g % racks:04d}"
        selectors: list[dict[str, Any]] = [
            {"rack_names": [rack], "node_tags": ["compute", "storage", "control"]},
            {"rack_names": [rack], "node_labels": [{"role": "monitoring"}]}]
        if g % 5 == 0:  # overlaps: also the storage nodes of a neighbouring rack
            selectors.append({"rack_names": [f"rack{(g + 1) % racks:04d}"],
                              "node_tags": ["storage"]})
        out.append({"name": f"group{g:04d}", "critical": g % 50 == 0, "depends_on": deps,
                    "selectors": selectors,
                    "success_criteria": {"percent_successful_nodes": 80}})
    return {"groups": out}


def plan(data: dict[str, Any], nodes: list[NodeInfo]) -> Deployment:
    problems = check_strategy(data, REF, [n.name for n in nodes])
    if problems:
        raise SystemExit(f"invalid generated strategy: {problems[:3]}")
    strategy = parse_strategy(data)
    index = NodeIndex(nodes)
    return Deployment(strategy, {g.name: index.select(g) for g in strategy.groups})


def drive(deployment: Deployment, rng: random.Random) -> int:
    calls = 0
    while (call := deployment.next_call()) is not None:
        calls += 1
        deployment.record(call, [n for n in call.nodes if rng.random() > 0.01])
    return calls


def bench_plan(nodes: int, groups: int, repeat: int = 7) -> None:
    rng = random.Random(1)
    racks = max(1, groups)
    infos = site_nodes(nodes, racks, rng)
    data = strategy_data(groups, racks, rng)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        deployment = plan(data, infos)
        times.append(time.perf_counter() - start)
    selected = sum(len(m) for m in deployment.members.values())
    target = TARGETS.get((nodes, groups))
    print(f"plan: {nodes} nodes, {groups} groups ({selected} memberships): "
          f"{statistics.median(times) * 1000:.1f} ms median of {repeat}"
          + (f" (target <= {target} ms)" if target else ""))
    start = time.perf_counter()
    calls = drive(deployment, rng)
    driven = time.perf_counter() - start
    size = len(json.dumps(deployment.to_dict()))
    failed = sum(1 for s in deployment.status.values() if s == "failed")
    print(f"  orchestrate (state machine only): {calls} Drydock calls, {failed} groups failed: "
          f"{driven * 1000:.0f} ms; persisted state {size / 1024:.0f} KiB")


def bench_engine(nodes: int, groups: int) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from deploy_site_engine import run_engine  # noqa: PLC0415 - a sibling script

    run_engine(nodes, groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, action="append",
                        help="site sizes to plan (default: 1,000 and 10,000)")
    parser.add_argument("--groups", type=int, action="append",
                        help="group counts to plan (default: 100 and 1,000)")
    parser.add_argument("--repeat", type=int, default=7, help="plans per shape (median shown)")
    parser.add_argument("--engine-nodes", type=int, default=1_000)
    parser.add_argument("--engine-groups", type=int, default=20)
    parser.add_argument("--no-engine", action="store_true", help="planning figures only")
    args = parser.parse_args()
    for nodes in args.nodes or [1_000, 10_000]:
        for groups in args.groups or [100, 1_000]:
            bench_plan(nodes, groups, args.repeat)
    if not args.no_engine:
        bench_engine(args.engine_nodes, args.engine_groups)


if __name__ == "__main__":
    main()
