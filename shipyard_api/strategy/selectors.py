"""Group selectors as Drydock node filters, and the same selection done locally on an index."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from common.clients.drydock import FilterItem, NodeFilter
from shipyard_api.strategy.model import Group, Selector


def selector_filter(selector: Selector) -> FilterItem:
    """One selector as a Drydock filter_set entry: the intersection of its criteria."""
    entry: FilterItem = {"filter_type": "intersection"}
    if selector.node_names:
        entry["node_names"] = list(selector.node_names)
    if selector.node_tags:
        entry["node_tags"] = list(selector.node_tags)
    if selector.node_labels:
        entry["node_labels"] = dict(selector.node_labels)
    if selector.rack_names:
        entry["rack_names"] = list(selector.rack_names)
    return entry


def node_filter(group: Group) -> NodeFilter | None:
    """The group's Drydock node filter: the union of its selectors; None selects all nodes."""
    if group.selects_all:
        return None
    return {"filter_set_type": "union",
            "filter_set": [selector_filter(s) for s in group.selectors]}


_EMPTY: set[int] = set()


@dataclass(frozen=True)
class NodeInfo:
    """What selection looks at on a node of the design."""

    name: str
    tags: tuple[str, ...] = ()
    rack: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    retired: bool = False


def _listed(node: object, name: str) -> object:
    """A field of a node of Drydock's listing (a mapping)."""
    return node.get(name) if isinstance(node, Mapping) else None


class NodeIndex:
    """Nodes by position in the design, with racks, tags and labels indexed on first use.

    Semantics match Drydock's node filter: within a criterion any listed name, tag or rack
    matches; every listed label must match; a selector is the intersection of its criteria.
    A selector starts from its smallest criterion and intersects it with the others, so each
    set operation costs about the size of the selection, not of the site. Sets hold design
    positions, so a selection is put in design order by sorting plain integers.
    """

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        infos = list(nodes)
        self.nodes: list[object] = [*infos]  # NodeInfo, or Drydock's listing as it is
        self._field: Callable[[object, str], object] = getattr
        self.order: list[str] = [n.name for n in infos]
        self.retired: set[int] = {i for i, n in enumerate(infos) if n.retired}
        self._indexes: dict[str, dict[object, set[int]]] = {}
        self._position: dict[str, int] | None = None

    @classmethod
    def of_listing(cls, listing: Iterable[Mapping[str, object]]) -> NodeIndex:
        """Drydock's node listing of a design (`GET /nodes?design_ref=`: design order, each
        node's `hostname`, `rack`, `tags`, `labels`, `retired`) indexed as it is, without
        building a NodeInfo per node (that cost more than planning at 10,000 nodes)."""
        index = cls(())
        listed = list(listing)
        index.nodes = [*listed]
        index._field = _listed
        index.order = [str(n.get("hostname") or n.get("name")) for n in listed]
        index.retired = {i for i, n in enumerate(listed) if n.get("retired")}
        return index

    def _positions(self, names: Iterable[str]) -> set[int]:
        if self._position is None:
            self._position = {n: i for i, n in enumerate(self.order)}
        return {self._position[n] for n in names if n in self._position}

    def prepare(self, selectors: Iterable[Selector]) -> None:
        """Build, in one pass over the nodes, every index these selectors use."""
        kinds: set[str] = set()
        for s in selectors:
            kinds.update(("rack",) if s.rack_names else ())
            kinds.update(("tag",) if s.node_tags else ())
            kinds.update(f"label:{key}" for key, _ in s.node_labels)
        self._build(kinds - self._indexes.keys())

    def _index(self, kind: str) -> dict[object, set[int]]:
        """Node positions by rack, by tag, or by the value of one label key ("label:<key>");
        each built once, on first use (or by `prepare`)."""
        if kind not in self._indexes:
            self._build({kind})
        return self._indexes[kind]

    def _build(self, kinds: set[str]) -> None:
        if not kinds:
            return
        racks: defaultdict[object, set[int]] | None = \
            defaultdict(set) if "rack" in kinds else None
        tags: defaultdict[object, set[int]] | None = defaultdict(set) if "tag" in kinds else None
        labels: dict[str, defaultdict[object, set[int]]] = {
            k.removeprefix("label:"): defaultdict(set) for k in kinds if k.startswith("label:")}
        field = self._field
        for i, node in enumerate(self.nodes):
            if racks is not None:
                racks[field(node, "rack")].add(i)
            if tags is not None:
                found = field(node, "tags")
                for tag in found if isinstance(found, list | tuple) else ():
                    tags[tag].add(i)
            values = field(node, "labels") if labels else None
            if isinstance(values, Mapping):
                for key, built in labels.items():
                    value = values.get(key)
                    if value is not None:
                        built[value].add(i)
        if racks is not None:
            self._indexes["rack"] = dict(racks)
        if tags is not None:
            self._indexes["tag"] = dict(tags)
        for key, built in labels.items():
            self._indexes[f"label:{key}"] = dict(built)

    def _criteria(self, s: Selector) -> list[list[set[int]]]:
        """Each criterion of the selector as the sets of which a node must be in one."""
        out: list[list[set[int]]] = []
        if s.node_names:
            out.append([self._positions(s.node_names)])
        for kind, keys in (("rack", s.rack_names), ("tag", s.node_tags)):
            if keys:
                index = self._index(kind)
                out.append([index.get(k, _EMPTY) for k in keys])
        out.extend([self._index(f"label:{key}").get(value, _EMPTY)]
                   for key, value in dict(s.node_labels).items())  # as sent: last value wins
        return out

    def _selector(self, s: Selector) -> set[int]:
        criteria = sorted(self._criteria(s), key=lambda sets: sum(map(len, sets)))
        if not criteria:
            return set(range(len(self.order)))
        chosen: set[int] = set().union(*criteria[0])
        for sets in criteria[1:]:
            if not chosen:
                break
            chosen = chosen & sets[0] if len(sets) == 1 else \
                set().union(*(chosen & part for part in sets))
        return chosen

    def select(self, group: Group) -> list[str]:
        """The group's nodes in design order, retired nodes left out."""
        if group.selects_all:
            return [n for i, n in enumerate(self.order) if i not in self.retired]
        chosen: set[int] = set().union(*(self._selector(s) for s in group.selectors))
        order = self.order
        return [order[i] for i in sorted(chosen - self.retired)]


def without_retired(selected: Sequence[str], retired: Iterable[str]) -> list[str]:
    """Drydock's answer for a group minus the nodes Drydock reports as retired."""
    gone = set(retired)
    return [n for n in selected if n not in gone]
