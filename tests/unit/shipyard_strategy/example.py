"""Spec 001's example strategy and a site whose nodes carry the tags and racks it selects on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from shipyard_api.strategy.model import Strategy, parse_strategy
from shipyard_api.strategy.progress import Call, Deployment
from shipyard_api.strategy.selectors import NodeIndex, NodeInfo

ROOT = Path(__file__).resolve().parents[3]
SITE = yaml.safe_load((ROOT / "etc" / "sites" / "strategy-example.yaml").read_text())


def example_data() -> dict[str, Any]:
    data: dict[str, Any] = SITE["deployment_strategy"]
    return data


def example_strategy() -> Strategy:
    return parse_strategy(example_data())


def example_nodes(retired: Iterable[str] = ()) -> list[NodeInfo]:
    gone = set(retired)
    return [NodeInfo(n["name"], tuple(n.get("tags") or ()), n.get("rack"),
                     dict(n.get("labels") or {}), n["name"] in gone) for n in SITE["nodes"]]


def plan(strategy: Strategy | None = None, nodes: list[NodeInfo] | None = None) -> Deployment:
    strategy = strategy or example_strategy()
    index = NodeIndex(nodes if nodes is not None else example_nodes())
    return Deployment(strategy, {g.name: index.select(g) for g in strategy.groups})


@dataclass
class FakeDrydockRun:
    """Plays Drydock synchronously: (action, node) pairs in `fail` fail, `timeout` groups time
    out; every call made is kept."""

    fail: set[tuple[str, str]] = field(default_factory=set)
    timeout: set[tuple[str, str]] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)

    def run(self, deployment: Deployment) -> Deployment:
        while (call := deployment.next_call()) is not None:
            self.calls.append(call)
            if (call.phase, call.group) in self.timeout:
                deployment.record_failure(call, "Drydock did not finish within 1 s")
                continue
            deployment.record(call, [n for n in call.nodes if (call.phase, n) not in self.fail])
        return deployment


def trace(deployment: Deployment) -> list[str]:
    """The processing as spec 001 draws it: 'prepare ntp-node <SUCCESS>' lines."""
    out = []
    for h in deployment.history:
        text = h["result"].upper() + (", " + h["detail"] if h["detail"].startswith("due") else "")
        out.append(f"{h['phase']} {h['group']} <{text}>")
    return out
