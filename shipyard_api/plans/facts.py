"""The facts a plan relied on, per step, and how a step compares them when it starts.

A fact is `{"step", "fact", "value", "rule"}`; the step whose id is `step` re-reads it at its
start and stops when the rule no longer holds:

    rule       holds when                          used for
    ---------  ----------------------------------  ---------------------------------------
    equal      now == planned                      path, BMC reachable, wipe plan, groups
    at_least   now >= planned (absent: holds)      a PDB's disruptions allowed
    keeps      every planned item is still there   healthy etcd members
    no_new     nothing beyond the planned items    eviction locks held, etcd learners

Facts are read with the same functions when planning and when re-checking, so a plan and a
re-check can only differ because the world did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Fact = dict[str, Any]


def fact(step: str, name: str, value: Any, rule: str = "equal") -> Fact:
    return {"step": step, "fact": name, "value": value, "rule": rule}


def path_facts(node: str, path: str | None, power: str | None) -> list[Fact]:
    step = f"assess_node.{node}"
    return [fact(step, "path", path), fact(step, "BMC power state", power)]


def decommission_facts(node: str, preview: Mapping[str, Any],
                       targets: Iterable[str]) -> list[Fact]:
    """PDBs covering the node's pods, locks held, etcd members healthy (other than the
    action's own targets, which it removes itself) and learners."""
    step = f"decommission.{node}"
    drain = preview.get("drain") or {}
    fenced = bool(preview.get("fenced"))  # the taint bypasses budgets and locks
    out = [] if fenced else [
        fact(step, f"PodDisruptionBudget {b['budget']} disruptions allowed",
             b["disruptions_allowed"], "at_least") for b in drain.get("budgets") or []]
    if drain and not fenced:
        out.append(fact(step, f"eviction locks held on {node}",
                        sorted(drain.get("eviction_locks") or []), "no_new"))
    leaving = set(targets)
    for entry in preview.get("etcd") or []:
        if "members" not in entry:
            continue
        healthy = sorted(m["name"] for m in entry["members"]
                         if m.get("healthy") and m["name"] not in leaving)
        out.append(fact(step, f"etcd {entry['cluster']} healthy members", healthy, "keeps"))
        out.append(fact(step, f"etcd {entry['cluster']} learners",
                        sorted(entry.get("learners") or []), "no_new"))
    return out


def destroy_facts(node: str, preview_node: Mapping[str, Any]) -> list[Fact]:
    step = f"destroy_nodes.{node}"
    wipe = preview_node.get("wipe") or {}
    disks = [f"{d.get('disk')} {d.get('result')}" + (f" ({d['method']})" if d.get("method")
                                                      else "") for d in wipe.get("disks") or []]
    return [fact(step, "BMC reachable", bool((preview_node.get("bmc") or {}).get("reachable"))),
            fact(step, "wipe plan", disks), fact(step, "wipe refused", wipe.get("refusal")),
            fact(step, "retired", bool(preview_node.get("retired")))]


def group_facts(groups: Sequence[Mapping[str, Any]], retired: Sequence[str]) -> list[Fact]:
    out = [fact("baremetal", f"group {g['name']} nodes", list(g["nodes"])) for g in groups]
    return [*out, fact("baremetal", "retired nodes", sorted(retired))]


def _holds(rule: str, planned: Any, now: Any) -> bool:
    if rule == "at_least":
        return now is None or (planned is not None and now >= planned)
    if rule == "keeps":
        return set(planned or []) <= set(now or [])
    if rule == "no_new":
        return set(now or []) <= set(planned or [])
    return bool(planned == now)


def _describe(rule: str, planned: Any, now: Any) -> str:
    if rule == "keeps":
        return f"no longer: {', '.join(sorted(set(planned or []) - set(now or [])))}"
    if rule == "no_new":
        return f"new: {', '.join(sorted(set(now or []) - set(planned or [])))}"
    return f"{planned!r} -> {now!r}"


def compare(planned: Sequence[Fact], now: Sequence[Fact]) -> list[dict[str, Any]]:
    """Every planned fact whose rule no longer holds: fact, planned, now, rule, change."""
    current = {f["fact"]: f["value"] for f in now}
    out = []
    for f in planned:
        value = current.get(f["fact"])
        if not _holds(f["rule"], f["value"], value):
            out.append({"fact": f["fact"], "planned": f["value"], "now": value,
                        "rule": f["rule"], "change": _describe(f["rule"], f["value"], value)})
    return out


def diff_text(changes: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{c['fact']}: {c['change']}" for c in changes)
