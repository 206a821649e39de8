"""The design's failure domains (drydock/Region/v1 `failure_domains`): which domains each
node belongs to, with their budgets, and every problem of a declaration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from common.context import RequestContext
from common.documents import Document, doc_ref
from common.jsontypes import JSON
from common.status import Message, validation_message
from drydock_api.budgets.slots import Claim
from drydock_api.nodes.design import REGION, Design

ETCD_CLUSTERS = "promenade/EtcdClusters/v1"
BY = ("rack", "etcd_cluster", "label")


@dataclass(frozen=True)
class Domain:
    """One declaration: nodes grouped `by` something, each group allowed `budget` out."""

    name: str
    by: str
    budget: int
    label: str | None = None
    budgets: Mapping[str, int] = field(default_factory=dict)

    def budget_of(self, value: str) -> int:
        return int(self.budgets.get(value, self.budget))


def declarations(docs: list[Document]) -> list[Domain]:
    """The well-formed declarations of the design's Region (schema errors are reported by
    schema validation; a malformed entry is left out here)."""
    out = []
    for entry in _entries(docs):
        if not isinstance(entry, dict) or entry.get("by") not in BY:
            continue
        budget, budgets = entry.get("budget"), entry.get("budgets") or {}
        if not isinstance(budget, int) or budget < 1 or not isinstance(budgets, dict):
            continue
        out.append(Domain(str(entry.get("name")), str(entry["by"]), budget,
                          str(entry["label"]) if entry.get("label") else None,
                          {str(k): int(v) for k, v in budgets.items() if isinstance(v, int)}))
    return out


def _entries(docs: list[Document]) -> list[JSON]:
    """The raw `failure_domains` entries of the design's Region documents."""
    out: list[JSON] = []
    for doc in docs:
        data = doc.get("data") if doc.get("schema") == REGION else None
        entries = data.get("failure_domains") if isinstance(data, dict) else None
        out += entries if isinstance(entries, list) else []
    return out


def etcd_members(docs: list[Document]) -> dict[str, list[str]]:
    """Node name -> the etcd clusters it runs a member of."""
    out: dict[str, list[str]] = {}
    for doc in docs:
        data = doc.get("data") if doc.get("schema") == ETCD_CLUSTERS else None
        clusters = data.get("clusters") if isinstance(data, dict) else None
        for cluster in clusters if isinstance(clusters, list) else []:
            members = cluster.get("members") if isinstance(cluster, dict) else None
            for member in members if isinstance(members, list) else []:
                node = member.get("node") or member.get("name") if isinstance(
                    member, dict) else None
                if node:
                    out.setdefault(str(node), []).append(str(cluster.get("name")))
    return out


def values_of(domain: Domain, node: str, design: Design,
              etcd: Mapping[str, list[str]]) -> list[str]:
    """The groups of `domain` that `node` is in (none: the domain does not limit it)."""
    found = design.nodes.get(node)
    if domain.by == "etcd_cluster":
        return list(etcd.get(node, []))
    if found is None:
        return []
    if domain.by == "rack":
        return [found.rack] if found.rack else []
    value = found.labels.get(domain.label or "")
    return [value] if value else []


def claims(node: str, design: Design, docs: list[Document]) -> list[Claim]:
    """Every domain slot `node` needs before it goes out of service."""
    etcd = etcd_members(docs)
    return [Claim(f"{d.name}:{value}", d.budget_of(value)) for d in declarations(docs)
            for value in values_of(d, node, design, etcd)]


def problems(docs: list[Document], design: Design) -> list[Message]:
    """What schema validation cannot see: two declarations of one name, and a per-domain
    budget naming a group no node of the design is in."""
    out: list[Message] = []
    region = next((doc_ref(d) for d in docs if d.get("schema") == REGION), None)
    etcd = etcd_members(docs)
    names = [str(e.get("name")) for e in _entries(docs) if isinstance(e, dict)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(_problem(f"failure_domains: {name} is declared twice", region))
    for d in declarations(docs):
        present = {v for n in design.nodes for v in values_of(d, n, design, etcd)}
        for value in sorted(set(d.budgets) - present):
            out.append(_problem(f"failure_domains: {d.name} gives a budget to {value}, which "
                                f"no node of the design is in (by {d.by}"
                                + (f" {d.label}" if d.label else "") + ")", region))
    return out


def _problem(text: str, ref: dict[str, str] | None) -> Message:
    return validation_message(text, name="FailureDomains", documents=[ref] if ref else [])


def design_claims(documents: Callable[[JSON, RequestContext | None], list[Document]],
                  design: Callable[[JSON, RequestContext | None], Design],
                  ) -> Callable[[str, JSON, RequestContext | None], list[Claim]]:
    """`claims` of a node in the design behind a reference (both read through the loader's
    caches)."""
    def claims_of(node: str, ref: JSON, ctx: RequestContext | None) -> list[Claim]:
        return claims(node, design(ref, ctx), documents(ref, ctx))

    return claims_of
