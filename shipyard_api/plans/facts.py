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

from common.clients.promenade import DecommissionPreview
from common.jsontypes import JSON, JSONObject, as_list, as_object

Fact = JSONObject  # {"step", "fact", "value", "rule"}, stored with the plan


def fact(step: str, name: str, value: JSON, rule: str = "equal") -> Fact:
    return {"step": step, "fact": name, "value": value, "rule": rule}


def _sorted(items: Iterable[JSON]) -> list[JSON]:
    return [*sorted(map(str, items))]


def path_facts(node: str, path: str | None, power: str | None) -> list[Fact]:
    step = f"assess_node.{node}"
    return [fact(step, "path", path), fact(step, "BMC power state", power)]


def decommission_facts(node: str, preview: DecommissionPreview,
                       targets: Iterable[str]) -> list[Fact]:
    """PDBs covering the node's pods, locks held, etcd members healthy (other than the
    action's own targets, which it removes itself) and learners."""
    step = f"decommission.{node}"
    drain = preview.get("drain") or {}
    fenced = bool(preview.get("fenced"))  # the taint bypasses budgets and locks
    out = [] if fenced else [
        fact(step, f"PodDisruptionBudget {b['budget']} disruptions allowed",
             b["disruptions_allowed"], "at_least")
        for b in map(as_object, as_list(drain.get("budgets")))]
    if drain and not fenced:
        out.append(fact(step, f"eviction locks held on {node}",
                        _sorted(as_list(drain.get("eviction_locks"))), "no_new"))
    leaving = set(targets)
    for entry in preview.get("etcd") or []:
        if "members" not in entry:
            continue
        healthy = _sorted(m["name"] for m in entry["members"]
                          if m.get("healthy") and m["name"] not in leaving)
        out.append(fact(step, f"etcd {entry['cluster']} healthy members", healthy, "keeps"))
        out.append(fact(step, f"etcd {entry['cluster']} learners",
                        _sorted(entry.get("learners") or []), "no_new"))
    return out


def destroy_facts(node: str, preview_node: JSONObject) -> list[Fact]:
    step = f"destroy_nodes.{node}"
    wipe = as_object(preview_node.get("wipe"))
    disks: list[JSON] = [
        f"{d.get('disk')} {d.get('result')}" + (f" ({d['method']})" if d.get("method") else "")
        for d in map(as_object, as_list(wipe.get("disks")))]
    bmc = as_object(preview_node.get("bmc"))
    return [fact(step, "BMC reachable", bool(bmc.get("reachable"))),
            fact(step, "wipe plan", disks), fact(step, "wipe refused", wipe.get("refusal")),
            fact(step, "retired", bool(preview_node.get("retired")))]


def group_facts(groups: Mapping[str, Iterable[str]], retired: Sequence[str]) -> list[Fact]:
    """Each group's nodes (groups in their order) and the retired nodes."""
    out = [fact("baremetal", f"group {name} nodes", list[JSON](nodes))
           for name, nodes in groups.items()]
    return [*out, fact("baremetal", "retired nodes", _sorted(retired))]


def _names(value: JSON) -> set[str]:
    """A list fact's items (names: strings)."""
    return {str(x) for x in as_list(value)}


def _holds(rule: str, planned: JSON, now: JSON) -> bool:
    if rule == "at_least":
        return now is None or (isinstance(planned, int | float) and isinstance(now, int | float)
                               and now >= planned)
    if rule == "keeps":
        return _names(planned) <= _names(now)
    if rule == "no_new":
        return _names(now) <= _names(planned)
    return bool(planned == now)


def _describe(rule: str, planned: JSON, now: JSON) -> str:
    if rule == "keeps":
        return f"no longer: {', '.join(sorted(_names(planned) - _names(now)))}"
    if rule == "no_new":
        return f"new: {', '.join(sorted(_names(now) - _names(planned)))}"
    return f"{planned!r} -> {now!r}"


def compare(planned: Sequence[Fact], now: Sequence[Fact]) -> list[JSONObject]:
    """Every planned fact whose rule no longer holds: fact, planned, now, rule, change."""
    current = {str(f["fact"]): f["value"] for f in now}
    out: list[JSONObject] = []
    for f in planned:
        value = current.get(str(f["fact"]))
        rule = str(f["rule"])
        if not _holds(rule, f["value"], value):
            out.append({"fact": f["fact"], "planned": f["value"], "now": value,
                        "rule": rule, "change": _describe(rule, f["value"], value)})
    return out


def diff_text(changes: Sequence[Mapping[str, object]]) -> str:
    return "; ".join(f"{c['fact']}: {c['change']}" for c in changes)
