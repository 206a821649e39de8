"""Node filters (Airship semantics, stricter): which design nodes a filter selects. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import BadRequest, ValidationFailed
from common.jsontypes import JSON, as_list, as_object, member
from common.nodenames import MAX_NODE_NAME, check_names
from common.status import validation_message
from drydock_api.nodes.design import NodeDef

SET_TYPES = ("union", "intersection")
CRITERIA = ("node_names", "node_tags", "node_labels", "rack_names", "rack_labels")


class UnknownNodes(BadRequest):
    reason, title = "UnknownNodes", "Node filter names nodes not in the design"


def check_filter(node_filter: object) -> list[str]:
    """Every structural problem of a node filter (empty when valid; None is valid)."""
    if node_filter is None:
        return []
    if not isinstance(node_filter, dict):
        return ["node_filter must be an object or null"]
    problems = []
    for key in node_filter:
        if key not in ("filter_set_type", "filter_set"):
            problems.append(f"node_filter: unknown field {key!r}")
    if node_filter.get("filter_set_type", "union") not in SET_TYPES:
        problems.append("node_filter.filter_set_type must be union or intersection")
    entries = node_filter.get("filter_set")
    if not isinstance(entries, list):
        return problems + ["node_filter.filter_set must be a list"]
    for i, entry in enumerate(entries):
        problems += _check_entry(i, entry)
    return problems


def _check_entry(i: int, entry: object) -> list[str]:
    where = f"node_filter.filter_set[{i}]"
    if not isinstance(entry, dict):
        return [f"{where} must be an object"]
    problems = [f"{where}: unknown field {k!r}" for k in entry
                if k not in ("filter_type", *CRITERIA)]
    if entry.get("filter_type", "intersection") not in SET_TYPES:
        problems.append(f"{where}.filter_type must be union or intersection")
    for key in ("node_names", "node_tags", "rack_names"):
        value = entry.get(key)
        if value is not None and not (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            problems.append(f"{where}.{key} must be a list of strings")
        elif key == "node_names" and value and check_names(value).too_long:
            problems.append(f"{where}.node_names holds names longer than {MAX_NODE_NAME} "
                            "characters")
    for key in ("node_labels", "rack_labels"):
        if label_pairs(entry.get(key)) is None:
            problems.append(f"{where}.{key} must be an object of label: value "
                            f"(or a list of such objects)")
    return problems


def label_pairs(value: object) -> dict[str, str] | None:
    """Labels given as `{k: v}` or as a list of `{k: v}` (spec 001's selectors); None if bad."""
    if value is None:
        return {}
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return None
    return {str(k): str(v) for item in items for k, v in item.items()}


def _labels_match(have: Mapping[str, str], want: JSON) -> bool:
    return all(have.get(k) == v for k, v in (label_pairs(want) or {}).items())


def _criteria(entry: Mapping[str, JSON], node: NodeDef,
              rack_labels: Mapping[str, Mapping[str, str]]) -> list[bool]:
    """One boolean per criterion given in the entry (absent or empty criteria are skipped)."""
    out = []
    if entry.get("node_names"):
        out.append(node.name in as_list(entry["node_names"]))
    if entry.get("node_tags"):
        out.append(any(t in node.tags for t in as_list(entry["node_tags"])))
    if entry.get("node_labels"):
        out.append(_labels_match(node.labels, entry["node_labels"]))
    if entry.get("rack_names"):
        out.append(node.rack in as_list(entry["rack_names"]))
    if entry.get("rack_labels"):
        out.append(_labels_match(rack_labels.get(node.rack or "", {}), entry["rack_labels"]))
    return out


def _entry_selects(entry: Mapping[str, JSON], node: NodeDef,
                   rack_labels: Mapping[str, Mapping[str, str]]) -> bool:
    results = _criteria(entry, node, rack_labels)
    if not results:
        return True
    if entry.get("filter_type", "intersection") == "union":
        return any(results)
    return all(results)


def require_filter(node_filter: object) -> None:
    """400 listing every problem of a node filter (at the API edge, once)."""
    problems = check_filter(node_filter)
    if problems:
        raise ValidationFailed("Invalid node filter", messages=[
            validation_message(p, name="NodeFilter") for p in problems])


def select_nodes(node_filter: JSON, nodes: Mapping[str, NodeDef],
                 rack_labels: Mapping[str, Mapping[str, str]] | None = None) -> list[str]:
    """Names of the nodes `node_filter` (checked at the edge: `check_filter`) selects, in
    design order; names that are not nodes of the design → 400 UnknownNodes."""
    if node_filter is None:
        return list(nodes)
    entries = [as_object(e) for e in as_list(member(node_filter, "filter_set"))]
    unknown = sorted({str(n) for e in entries for n in as_list(e.get("node_names"))
                      if n not in nodes})
    if unknown:
        text = f"Unknown node names: {', '.join(unknown)}"
        raise UnknownNodes(text, title=text, messages=[
            validation_message(f"Node {n} is not in the design", name="UnknownNode")
            for n in unknown])
    racks = rack_labels or {}
    per_entry = [{name for name, node in nodes.items() if _entry_selects(e, node, racks)}
                 for e in entries]
    if not per_entry:
        return []
    if member(node_filter, "filter_set_type") == "intersection":
        chosen = set.intersection(*per_entry)
    else:
        chosen = set.union(*per_entry)
    return [name for name in nodes if name in chosen]
