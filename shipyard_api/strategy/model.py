"""The DeploymentStrategy document as typed values, and the default one-group strategy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from common.documents import Document

STRATEGY_SCHEMA = "shipyard/DeploymentStrategy/v1"
CONFIGURATION_SCHEMA = "shipyard/DeploymentConfiguration/v1"
CONFIGURATION_NAME = "deployment-configuration"
DEFAULT_STRATEGY_NAME = "deployment-strategy"
DEFAULT_GROUP_NAME = "default"


@dataclass(frozen=True)
class Selector:
    """One selector: the intersection of the criteria given (an empty one selects all)."""

    node_names: tuple[str, ...] = ()
    node_tags: tuple[str, ...] = ()
    node_labels: tuple[tuple[str, str], ...] = ()
    rack_names: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.node_names or self.node_tags or self.node_labels or self.rack_names)


@dataclass(frozen=True)
class SuccessCriteria:
    """Each criterion given is evaluated on its own; none given means always successful."""

    percent_successful_nodes: float | None = None
    minimum_successful_nodes: int | None = None
    maximum_failed_nodes: int | None = None


@dataclass(frozen=True)
class Group:
    name: str
    critical: bool
    depends_on: tuple[str, ...] = ()
    selectors: tuple[Selector, ...] = ()
    success_criteria: SuccessCriteria = field(default_factory=SuccessCriteria)

    @property
    def selects_all(self) -> bool:
        """An empty selector list, or any empty selector, selects every node."""
        return not self.selectors or any(s.empty for s in self.selectors)


@dataclass(frozen=True)
class Strategy:
    name: str
    groups: tuple[Group, ...]

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(name)


def default_strategy() -> Strategy:
    """Without a strategy document: one critical group of all nodes, 100% must succeed."""
    return Strategy("(default)", (Group(
        DEFAULT_GROUP_NAME, True, (), (),
        SuccessCriteria(percent_successful_nodes=100)),))


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, (str, int)) and not isinstance(v, bool))


def label_pairs(value: object) -> tuple[tuple[str, str], ...]:
    """`node_labels` as (key, value) pairs; a list of `{key: value}` mappings (or one mapping)."""
    items = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, dict):
            out += [(str(k), str(v)) for k, v in item.items()]
    return tuple(out)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _integer(value: object) -> int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def parse_selector(raw: object) -> Selector:
    raw = raw if isinstance(raw, dict) else {}
    return Selector(_strings(raw.get("node_names")), _strings(raw.get("node_tags")),
                    label_pairs(raw.get("node_labels")), _strings(raw.get("rack_names")))


def parse_criteria(raw: object) -> SuccessCriteria:
    raw = raw if isinstance(raw, dict) else {}
    return SuccessCriteria(_number(raw.get("percent_successful_nodes")),
                           _integer(raw.get("minimum_successful_nodes")),
                           _integer(raw.get("maximum_failed_nodes")))


def parse_group(raw: Mapping[str, object]) -> Group:
    found = raw.get("selectors")
    selectors = found if isinstance(found, list) else []
    return Group(
        name=str(raw.get("name", "")),
        critical=raw.get("critical") is True,
        depends_on=_strings(raw.get("depends_on")),
        selectors=tuple(parse_selector(s) for s in selectors or []),
        success_criteria=parse_criteria(raw.get("success_criteria")),
    )


def parse_strategy(data: object, name: str = DEFAULT_STRATEGY_NAME) -> Strategy:
    """The strategy in a document's data (check it first with `checks.check_strategy`)."""
    groups = data.get("groups") if isinstance(data, dict) else None
    return Strategy(name, tuple(parse_group(g) for g in groups or [] if isinstance(g, dict)))


def _docs(docs: Iterable[Document], schema: str) -> list[Document]:
    return [d for d in docs if d.get("schema") == schema]


def _name(doc: Document) -> str:
    meta = doc.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def configured_strategy_name(docs: Iterable[Document]) -> tuple[str, bool]:
    """The strategy document's name and whether the configuration names it explicitly."""
    configs = _docs(docs, CONFIGURATION_SCHEMA)
    named = [c for c in configs if _name(c) == CONFIGURATION_NAME] or configs
    data = named[0].get("data") if named else None
    provisioner = data.get("physical_provisioner") if isinstance(data, dict) else None
    value = provisioner.get("deployment_strategy") if isinstance(provisioner, dict) else None
    if isinstance(value, str) and value:
        return value, True
    return DEFAULT_STRATEGY_NAME, False


def strategy_document(docs: Iterable[Document]) -> Document | None:
    """The DeploymentStrategy document the design's DeploymentConfiguration points to."""
    docs = list(docs)
    name, _ = configured_strategy_name(docs)
    found = [d for d in _docs(docs, STRATEGY_SCHEMA) if _name(d) == name]
    return found[0] if found else None


def strategy_of(docs: Iterable[Document]) -> Strategy:
    """The design's strategy, or the default one-group strategy when it has none."""
    doc = strategy_document(docs)
    if doc is None:
        return default_strategy()
    return parse_strategy(doc.get("data"), _name(doc))


def strategy_data(strategy: Strategy) -> dict[str, object]:
    """The strategy back as document data (what `parse_strategy` reads)."""
    groups = []
    for g in strategy.groups:
        c = g.success_criteria
        criteria = {k: v for k, v in (("percent_successful_nodes", c.percent_successful_nodes),
                                      ("minimum_successful_nodes", c.minimum_successful_nodes),
                                      ("maximum_failed_nodes", c.maximum_failed_nodes))
                    if v is not None}
        groups.append({
            "name": g.name, "critical": g.critical, "depends_on": list(g.depends_on),
            "selectors": [{"node_names": list(s.node_names), "node_tags": list(s.node_tags),
                           "node_labels": [{k: v} for k, v in s.node_labels],
                           "rack_names": list(s.rack_names)} for s in g.selectors],
            "success_criteria": criteria})
    return {"groups": groups}
