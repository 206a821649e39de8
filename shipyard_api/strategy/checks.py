"""Commit-time checks of a DeploymentStrategy beyond its JSON Schema, one message per problem."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from typing import TypeGuard

import networkx as nx

from common.status import Message, validation_message
from shipyard_api.strategy.order import ordered_by_dependencies

CHECK = "DeploymentStrategy"


class _Messages:
    def __init__(self, ref: Mapping[str, str]) -> None:
        self.ref = dict(ref)
        self.out: list[Message] = []

    def add(self, text: str, where: str) -> None:
        self.out.append(validation_message(
            f"{self.ref.get('schema')} {self.ref.get('name')}: {text}", name=CHECK,
            documents=[self.ref], diagnostic=where))


def _groups(data: object) -> list[tuple[int, dict[str, object]]]:
    groups = data.get("groups") if isinstance(data, dict) else None
    return [(i, g) for i, g in enumerate(groups or []) if isinstance(g, dict)] \
        if isinstance(groups, list) else []


def check_strategy(data: object, ref: Mapping[str, str],
                   design_nodes: Collection[str] | None = None) -> list[Message]:
    """Duplicates, unknown or circular dependencies, malformed labels, criteria out of range,
    and (when the design's nodes are given) selectors naming nodes the design lacks."""
    msgs = _Messages(ref)
    if data is None:
        msgs.add("data is null: a DeploymentStrategy must give its groups (data: {groups: "
                 "[...]}); an empty strategy would deploy nothing", "data")
        return msgs.out
    groups = _groups(data)
    _check_names(groups, msgs)
    _check_dependencies(groups, msgs)
    for i, group in groups:
        _check_selectors(i, group, msgs, design_nodes)
        _check_criteria(i, group, msgs)
    return msgs.out


def _check_names(groups: list[tuple[int, dict[str, object]]], msgs: _Messages) -> None:
    counts = Counter(str(g.get("name")) for _, g in groups if isinstance(g.get("name"), str))
    for name, count in sorted(counts.items()):
        if count > 1:
            where = [i for i, g in groups if g.get("name") == name]
            msgs.add(f"group name {name!r} is used by {count} groups "
                     f"(groups {', '.join(map(str, where))}); names must be unique",
                     f"groups/{where[1]}/name")


def _check_dependencies(groups: list[tuple[int, dict[str, object]]], msgs: _Messages) -> None:
    names = {g.get("name") for _, g in groups if isinstance(g.get("name"), str)}
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(n for n in names if isinstance(n, str))
    for i, group in groups:
        deps = group.get("depends_on")
        if not isinstance(deps, list):
            continue
        for j, dep in enumerate(deps):
            if not isinstance(dep, str):
                continue
            if dep not in names:
                msgs.add(f"group {group.get('name')!r} depends on {dep!r}, which is not a "
                         "group of this strategy", f"groups/{i}/depends_on/{j}")
            elif isinstance(group.get("name"), str):
                graph.add_edge(dep, group["name"])
    if ordered_by_dependencies({n: i for i, n in enumerate(graph)},
                               {n: list(graph.predecessors(n)) for n in graph}) is not None:
        return  # no cycle: the costly search below is for naming the cycles
    for component in sorted(nx.strongly_connected_components(graph), key=sorted):
        members = sorted(component)
        if len(members) == 1 and not graph.has_edge(members[0], members[0]):
            continue
        cycle = nx.find_cycle(graph.subgraph(members))
        path = " -> ".join([str(a) for a, _ in cycle] + [str(cycle[0][0])])
        msgs.add(f"circular dependency among groups {', '.join(members)} "
                 f"({path}, read 'X -> Y' as 'Y depends on X')", "groups/depends_on")


def _check_selectors(i: int, group: dict[str, object], msgs: _Messages,
                     design_nodes: Collection[str] | None) -> None:
    selectors = group.get("selectors")
    if not isinstance(selectors, list):
        return
    for s, selector in enumerate(selectors):
        if not isinstance(selector, dict):
            continue
        where = f"groups/{i}/selectors/{s}"
        _check_labels(selector.get("node_labels"), f"{where}/node_labels", msgs,
                      str(group.get("name")))
        names = selector.get("node_names")
        if design_nodes is not None and isinstance(names, list):
            for n, name in enumerate(names):
                if isinstance(name, str) and name not in design_nodes:
                    msgs.add(f"group {group.get('name')!r} selects node {name!r}, which is "
                             "not a node of the design", f"{where}/node_names/{n}")


def _check_labels(labels: object, where: str, msgs: _Messages, group: str) -> None:
    if labels is None:
        return
    if not isinstance(labels, list):
        msgs.add(f"group {group!r}: node_labels must be a list of 'key: value' entries", where)
        return
    for n, label in enumerate(labels):
        problem = _label_problem(label)
        if problem:
            msgs.add(f"group {group!r}: node label {label!r} {problem}; write each label "
                     "as one 'key: value' entry", f"{where}/{n}")


def _label_problem(label: object) -> str | None:
    if not isinstance(label, dict):
        return "is not of the form 'key: value'"
    if len(label) != 1:
        return f"has {len(label)} keys instead of one"
    key, value = next(iter(label.items()))
    if not isinstance(key, str) or not key.strip():
        return "has an empty or non-string key"
    if not isinstance(value, str):
        return "has a value that is not a string (quote it)"
    if not value.strip():
        return f"has a blank value for {key!r}"
    if ":" in key or ":" in value:
        return (f"has a ':' in its {'key' if ':' in key else 'value'} (write 'key: value' "
                "with a space after the colon; a label value cannot contain ':')")
    return None


def _check_criteria(i: int, group: dict[str, object], msgs: _Messages) -> None:
    criteria = group.get("success_criteria")
    if not isinstance(criteria, dict):
        return
    name, where = group.get("name"), f"groups/{i}/success_criteria"
    pct = criteria.get("percent_successful_nodes")
    if _is_number(pct) and not 0 <= pct <= 100:
        msgs.add(f"group {name!r}: percent_successful_nodes {pct} is out of range "
                 "(0 to 100)", f"{where}/percent_successful_nodes")
    for key in ("minimum_successful_nodes", "maximum_failed_nodes"):
        value = criteria.get(key)
        if _is_number(value) and (value < 0 or value != int(value)):
            msgs.add(f"group {name!r}: {key} {value} is out of range (a whole number, "
                     "0 or more)", f"{where}/{key}")


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
