"""Deployment strategies at scale: the time to plan a large site, and the orchestration overhead.

1. Planning: 1,000 and 10,000 nodes in 100 and 1,000 groups (every group depends on up to
   three earlier ones and selects nodes by rack, tag and label). Timed (median of --repeat):
   the product's planning path, `shipyard_api.actions.baremetal.plan_deployment` (what the
   deploy_site / update_site baremetal step calls), given the design's documents and a fake
   Drydock port answering the node listing as Drydock's `GET /nodes?design_ref=` does: check
   and parse the strategy, index the listed nodes, select every group's nodes, order the
   groups, build the state machine. Decoding that listing's JSON (what the HTTP client does
   before planning) is printed apart.
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
from typing import Any, cast

from common.context import RequestContext
from shipyard_api.actions.baremetal import NodeSelectionPort, plan_deployment
from shipyard_api.strategy.progress import Deployment
from shipyard_api.strategy.selectors import NodeInfo

TARGETS = {(10_000, 100): 15, (10_000, 1_000): 150}  # ms, issue 19
DESIGN_REF = "https://shipyard/api/v1.0/revisions/1/rendered-documents"
RC = RequestContext(marker="bench", user="admin")


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


def listing(nodes: list[NodeInfo]) -> list[dict[str, Any]]:
    """The design's nodes as Drydock lists them (the fields planning reads, and a few more)."""
    return [{"hostname": n.name, "name": n.name, "in_design": True, "rack": n.rack,
             "tags": list(n.tags), "labels": dict(n.labels), "maas_status": "Deployed",
             "power_state": "on", "retired": n.retired} for n in nodes]


def documents(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The design documents planning reads: the configuration and the strategy it names."""
    return [{"schema": "shipyard/DeploymentConfiguration/v1",
             "metadata": {"schema": "metadata/Document/v1",
                          "name": "deployment-configuration"},
             "data": {"physical_provisioner": {"deployment_strategy": "deployment-strategy"}}},
            {"schema": "shipyard/DeploymentStrategy/v1",
             "metadata": {"schema": "metadata/Document/v1", "name": "deployment-strategy"},
             "data": data}]


class ListingDrydock:
    """Drydock as planning uses it: the node listing (a node filter call would be a
    regression: planning asks Drydock's filter only for groups naming unknown nodes)."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self._nodes = nodes
        self.filter_calls = 0

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[dict[str, Any]]:
        return self._nodes

    def select_nodes(self, design_ref: str, node_filter: dict[str, Any] | None, *,
                     ctx: RequestContext) -> list[str]:
        self.filter_calls += 1
        raise SystemExit("planning asked Drydock's node filter")


def plan(docs: list[dict[str, Any]], drydock: ListingDrydock) -> Deployment:
    planned = plan_deployment(docs, cast(NodeSelectionPort, drydock), DESIGN_REF, RC)
    if not isinstance(planned, tuple):
        raise SystemExit(f"invalid generated strategy: {planned.message}")
    return planned[0]


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
    docs = documents(strategy_data(groups, racks, rng))
    encoded = json.dumps(listing(infos)).encode()
    decode = []
    for _ in range(repeat):
        start = time.perf_counter()
        listed = json.loads(encoded)  # as DrydockClient.nodes returns it (decoded, not copied)
        decode.append(time.perf_counter() - start)
    drydock = ListingDrydock(listed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        deployment = plan(docs, drydock)
        times.append(time.perf_counter() - start)
    selected = sum(len(m) for m in deployment.members.values())
    target = TARGETS.get((nodes, groups))
    print(f"plan: {nodes} nodes, {groups} groups ({selected} memberships): "
          f"{statistics.median(times) * 1000:.1f} ms median of {repeat}"
          + (f" (target <= {target} ms)" if target else "")
          + f"; Drydock node filter calls: {drydock.filter_calls}; decoding the listing "
          f"({len(encoded) / 1024:.0f} KiB): {statistics.median(decode) * 1000:.1f} ms")
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
