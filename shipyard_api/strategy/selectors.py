"""Group selectors as Drydock node filters, and the same selection done locally on an index."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shipyard_api.strategy.model import Group, Selector


def selector_filter(selector: Selector) -> dict[str, Any]:
    """One selector as a Drydock filter_set entry: the intersection of its criteria."""
    entry: dict[str, Any] = {"filter_type": "intersection"}
    if selector.node_names:
        entry["node_names"] = list(selector.node_names)
    if selector.node_tags:
        entry["node_tags"] = list(selector.node_tags)
    if selector.node_labels:
        entry["node_labels"] = dict(selector.node_labels)
    if selector.rack_names:
        entry["rack_names"] = list(selector.rack_names)
    return entry


def node_filter(group: Group) -> dict[str, Any] | None:
    """The group's Drydock node filter: the union of its selectors; None selects all nodes."""
    if group.selects_all:
        return None
    return {"filter_set_type": "union",
            "filter_set": [selector_filter(s) for s in group.selectors]}


@dataclass(frozen=True)
class NodeInfo:
    """What selection looks at on a node of the design."""

    name: str
    tags: tuple[str, ...] = ()
    rack: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    retired: bool = False


class NodeIndex:
    """Nodes indexed by name, tag, rack and label so selection costs set operations only.

    Semantics match Drydock's node filter: within a criterion any listed name, tag or rack
    matches; every listed label must match; a selector is the intersection of its criteria.
    """

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self.order: list[str] = []
        self.by_tag: dict[str, set[str]] = {}
        self.by_rack: dict[str, set[str]] = {}
        self.by_label: dict[tuple[str, str], set[str]] = {}
        self.retired: set[str] = set()
        for node in nodes:
            self.order.append(node.name)
            for tag in node.tags:
                self.by_tag.setdefault(tag, set()).add(node.name)
            if node.rack is not None:
                self.by_rack.setdefault(node.rack, set()).add(node.name)
            for pair in node.labels.items():
                self.by_label.setdefault(pair, set()).add(node.name)
            if node.retired:
                self.retired.add(node.name)
        self.names = set(self.order)
        self._position = {n: i for i, n in enumerate(self.order)}

    def _selector(self, s: Selector) -> set[str]:
        chosen: set[str] | None = None
        parts: list[set[str]] = []
        if s.node_names:
            parts.append(self.names & set(s.node_names))
        if s.node_tags:
            parts.append(set().union(*(self.by_tag.get(t, set()) for t in s.node_tags)))
        if s.rack_names:
            parts.append(set().union(*(self.by_rack.get(r, set()) for r in s.rack_names)))
        for pair in s.node_labels:
            parts.append(self.by_label.get(pair, set()))
        for part in sorted(parts, key=len):
            chosen = set(part) if chosen is None else chosen & part
            if not chosen:
                break
        return set(self.names) if chosen is None else chosen

    def select(self, group: Group) -> list[str]:
        """The group's nodes in design order, retired nodes left out."""
        if group.selects_all:
            chosen = set(self.names)
        else:
            chosen = set().union(*(self._selector(s) for s in group.selectors))
        return self.ordered(chosen - self.retired)

    def ordered(self, names: Iterable[str]) -> list[str]:
        return sorted(names, key=lambda n: self._position.get(n, len(self._position)))


def without_retired(selected: Sequence[str], retired: Iterable[str]) -> list[str]:
    """Drydock's answer for a group minus the nodes Drydock reports as retired."""
    gone = set(retired)
    return [n for n in selected if n not in gone]
