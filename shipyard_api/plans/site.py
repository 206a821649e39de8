"""Group plans of deploy_site and update_site: the deployment strategy's groups in the order
the baremetal step runs them, each with its nodes (as Drydock selects them, retired nodes
left out), dependencies and success criteria, and what Drydock says of each node now."""

from __future__ import annotations

from dataclasses import asdict

from common.api import API_PREFIX as P
from common.context import RequestContext
from common.documents import Document
from common.errors import BerthError
from common.jsontypes import as_list, as_object
from shipyard_api.actions.baremetal import select_groups
from shipyard_api.actions.ports import Services
from shipyard_api.clients.ports import node_names_filter
from shipyard_api.documents.validation import shipyard_checks
from shipyard_api.plans import facts
from shipyard_api.plans.compose import open_design
from shipyard_api.plans.model import Composition, Reader, call
from shipyard_api.strategy.checks import check_strategy
from shipyard_api.strategy.criteria import missed_criteria
from shipyard_api.strategy.model import Group, Strategy, strategy_document, strategy_of
from shipyard_api.strategy.order import CircularDependency
from shipyard_api.strategy.progress import Deployment
from shipyard_api.strategy.selectors import selector_filter
from shipyard_api.workflow.definitions import Prepared


def selection(svc: Services, rc: RequestContext, ref: str,
              strategy: Strategy) -> tuple[list[str], Deployment]:
    """The retired nodes, and the groups' nodes in processing order as the baremetal step
    selects them (Drydock's node listing and filter semantics, retired nodes left out)."""
    retired, members = select_groups(svc.drydock, ref, strategy, rc)
    return sorted(retired), Deployment(strategy, members)


def _group(position: int, group: Group, nodes: list[str]) -> dict[str, object]:
    criteria = {k: v for k, v in asdict(group.success_criteria).items() if v is not None}
    return {"name": group.name, "position": position, "critical": group.critical,
            "depends_on": list(group.depends_on),
            "selectors": [selector_filter(s) for s in group.selectors] or "all nodes",
            "success_criteria": criteria, "nodes": nodes,
            "calls": [call("drydock", f"POST {P}/tasks prepare_nodes", "enlist, commission, "
                           "storage", then=nodes),
                      call("drydock", f"POST {P}/tasks deploy_nodes", "deploy (until MAAS "
                           "Deployed)", then=nodes),
                      call("promenade", f"GET {P}/nodes/{{node}}", "each deployed node Ready "
                           "in Kubernetes", then=nodes)]}


def _judge(out: Composition, group: Group, nodes: list[str], broken: dict[str, str]) -> None:
    """A group whose criteria fail if its nodes with a dead BMC fail: a blocker when it is
    critical (the action fails), else a warning."""
    bad = [n for n in nodes if n in broken]
    if not nodes:
        out.warn("shipyard", f"Group {group.name} selects no nodes")
    if not bad:
        return
    missed = missed_criteria(group.success_criteria, len(nodes) - len(bad), len(bad),
                             len(nodes))
    text = (f"Group {group.name}: {', '.join(bad)} would fail ({'; '.join(broken[n] for n in bad)})"
            + (f"; its success criteria would be missed: {'; '.join(missed)}" if missed else ""))
    if missed and group.critical:
        out.block("drydock", text + "; it is critical, so the action would fail")
    else:
        out.warn("drydock", text)


def _strategy_problems(out: Composition, docs: list[Document]) -> None:
    for m in shipyard_checks(docs):
        if m.get("error"):
            out.block("shipyard", str(m.get("message")))
    doc = strategy_document(docs)
    if doc is not None:
        for m in check_strategy(doc.get("data"), {"schema": str(doc.get("schema")),
                                                  "name": strategy_of(docs).name}):
            out.block("shipyard", str(m.get("message")))


def site(r: Reader, prepared: Prepared) -> Composition:
    out, docs = open_design(r, prepared)
    if docs is None:
        return out
    ref = str(out.design_ref)
    _strategy_problems(out, docs)
    strategy = strategy_of(docs)
    try:
        retired, deployment = selection(r.svc, r.rc, ref, strategy)
    except CircularDependency as exc:
        out.block("shipyard", str(exc))
        return out
    except BerthError as exc:
        out.block("drydock", f"Drydock could not select the groups' nodes: {exc.message}")
        return out
    out.groups = [_group(i + 1, strategy.group(name), deployment.members[name])
                  for i, name in enumerate(deployment.order)]
    out.facts += facts.group_facts({name: deployment.members[name]
                                    for name in deployment.order}, retired)
    everyone = list(deployment.nodes)
    broken = _nodes(r, out, ref, everyone, {n: [name for name in deployment.order
                                                if n in deployment.members[name]]
                                            for n in everyone})
    for name in deployment.order:
        _judge(out, strategy.group(name), deployment.members[name], broken)
    if retired:
        out.warn("drydock", f"Retired nodes left out of every group: {', '.join(retired)}")
    out.calls.append(call("promenade", f"PUT {P}/node-labels/{{node}}",
                          "after the groups: each deployed node's design labels",
                          then=everyone))
    return out


def _nodes(r: Reader, out: Composition, ref: str, names: list[str],
           groups: dict[str, list[str]]) -> dict[str, str]:
    """One entry per node; the nodes whose BMC would fail a deploy, with why."""
    if not names:
        return {}
    try:
        preview = r.svc.drydock.task_preview("deploy_nodes", ref, node_names_filter(names), {},
                                             ctx=r.rc)
    except BerthError as exc:
        out.block("drydock", f"Drydock could not preview deploy_nodes: {exc.message}")
        return {}
    broken = {}
    for n in map(as_object, as_list(preview.get("nodes"))):
        name = str(n.get("node"))
        out.nodes.append({"node": name, "groups": groups.get(name, []), "baremetal": {
            k: n.get(k) for k in ("bmc", "maas_status", "retired", "steps")}})
        if n.get("blockers"):
            broken[name] = "; ".join(map(str, as_list(n["blockers"])))
        for text in as_list(n.get("warnings")):
            out.warn("drydock", str(text), name)
    return broken
