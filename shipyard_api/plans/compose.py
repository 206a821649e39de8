"""Plans of redeploy_server and relabel_nodes, composed from the owners of the facts.

Shipyard decides the path of each node with the fencing decision table; Promenade previews
the decommission (pods, budgets, locks, capacity, etcd); Drydock previews destroy_nodes (BMC,
MAAS, retirement, wipe plan). Nothing here decides what those services own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import urlencode

from common.api import API_PREFIX as P
from common.clients.generated.shipyard import Call
from common.clients.promenade import DecommissionPreview
from common.documents import Document
from common.errors import BerthError
from common.jsontypes import JSON, JSONObject, as_list, as_object
from shipyard_api.actions import budget, disruption, fencing
from shipyard_api.actions.design import (
    decommission_timeouts,
    deployment_configuration,
    etcd_membership,
)
from shipyard_api.actions.redeploy import destroy_options
from shipyard_api.clients.ports import node_names_filter
from shipyard_api.plans import facts
from shipyard_api.plans.model import Composition, Reader, Source, call
from shipyard_api.workflow.definitions import ActionParameters, Prepared


def design_of(r: Reader, revision: int) -> tuple[str, list[Document]]:
    docs = r.svc.documents.rendered_documents(revision, cleartext=False)
    return r.svc.documents.design_ref(revision, r.svc.settings.public_url), docs


def open_design(r: Reader, prepared: Prepared,
                missing: str = "No committed revision of the design exists"
                ) -> tuple[Composition, list[Document] | None]:
    """The plan of a prepared action, on its revision's design (its reference set) and that
    revision's documents; without a revision, a plan blocked by `missing` and no documents."""
    out = Composition(revision_id=prepared.revision_id)
    if prepared.revision_id is None:
        out.block("shipyard", missing)
        return out, None
    out.design_ref, docs = design_of(r, prepared.revision_id)
    return out, docs


def labels_call(node: str, labels: Mapping[str, object] | None = None) -> Call:
    """Shipyard's relabel step for one node: the design's labels, on Promenade directly."""
    shown = "" if labels is None else ": " + (
        ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none")
    return call("promenade", f"PUT {P}/node-labels/{node}", f"the design's labels{shown}",
                node=node, step="relabel_nodes")


def _peer(out: Composition, source: Source, node: str | None, what: str,
          exc: BerthError) -> None:
    out.block(source, f"{source.capitalize()} could not {what}: {exc.message}", node)


def _node_calls(node: str, fenced: bool, query: Mapping[str, object],
                promenade: DecommissionPreview | None, drydock: JSONObject,
                options: Mapping[str, JSON]) -> list[Call]:
    phases = [str(p.get("phase")) + ("" if p.get("runs", True) else f" ({p.get('note')})")
              for p in (promenade["phases"] if promenade else [])]
    out: list[Call] = []
    if fenced:
        out.append(call("drydock", f'POST {P}/tasks power_off_nodes {{"force": true}}',
                        "fence-first: force the node off and confirm Off at its BMC",
                        node=node, step="fence_node", then=["power_off"]))
    out += [
        call("promenade", f"POST {P}/nodes/{node}/decommission?{urlencode(query)}",
             "take the node out of Kubernetes and etcd", node=node, step="decommission",
             then=phases),
        call("drydock", f"POST {P}/tasks destroy_nodes {json.dumps(dict(options))}",
             "power off, wipe as planned, release from MAAS", node=node, step="destroy_nodes",
             then=[str(s) for s in as_list(drydock.get("steps"))]),
        call("promenade", f"POST {P}/nodes/{node}/remove-from-cluster",
             "delete the Node object", node=node, step="remove_from_cluster"),
        call("drydock", f"POST {P}/tasks prepare_nodes", "enlist, commission, storage",
             node=node, step="prepare_nodes"),
        call("drydock", f"POST {P}/tasks deploy_nodes", "deploy the OS (until MAAS Deployed)",
             node=node, step="deploy_nodes"),
        call("promenade", f"GET {P}/nodes/{node}", "until the node is Ready", node=node,
             step="wait_node_ready"),
        labels_call(node)]
    return out


def _kubernetes(r: Reader, out: Composition, entry: dict[str, object], ref: str, fenced: bool,
                targets: list[str], parameters: ActionParameters) -> DecommissionPreview | None:
    """Promenade's decommission preview of the node: pods, budgets, capacity, etcd."""
    node = str(entry["node"])
    try:
        prom = r.svc.promenade.decommission_preview(
            node, ref, fenced=fenced, leaving=[t for t in targets if t != node], ctx=r.rc)
    except BerthError as exc:
        _peer(out, "promenade", node, "preview the decommission", exc)
        return None
    for key in ("kubernetes", "phases", "drain", "capacity", "etcd"):
        entry[key] = prom.get(key)
    for text in prom.get("blockers") or []:
        lifted = disruption.plan_finding(text, parameters)  # a budget disrupt-pdbs names
        if lifted is None:
            out.block("promenade", text, node)
        else:
            out.warn("promenade", lifted, node)
    for text in prom.get("warnings") or []:
        out.warn("promenade", text, node)
    out.facts += facts.decommission_facts(node, prom, targets)
    return prom


def _baremetal(out: Composition, entry: dict[str, object], drydock: JSONObject) -> None:
    """Drydock's destroy_nodes preview of the node: BMC, MAAS, retirement, the wipe plan."""
    node = str(entry["node"])
    entry["baremetal"] = {k: drydock.get(k) for k in ("bmc", "maas_status", "retired",
                                                      "retired_reason", "wipe", "steps")}
    if drydock:
        out.facts += facts.destroy_facts(node, drydock)
    for text in as_list(drydock.get("blockers")):
        out.block("drydock", str(text), node)
    for text in as_list(drydock.get("warnings")):
        out.warn("drydock", str(text), node)
    if drydock.get("retired"):
        out.block("drydock", f"{node} is retired: a retired node is never redeployed; "
                  "unretire it first", node)


def _one_node(r: Reader, out: Composition, node: str, ref: str, etcd: list[str],
              query: Mapping[str, int], drydock: JSONObject, prepared: Prepared) -> None:
    """The node's path (Shipyard's decision table), then what each peer says of it."""
    entry: dict[str, object] = {"node": node, "etcd_clusters": etcd}
    out.nodes.append(entry)
    try:
        found = fencing.read_facts(r.svc, r.rc, ref, node, etcd, r.now)
    except BerthError as exc:
        _peer(out, "shipyard", node, "read the node's state for its path", exc)
        return
    path = fencing.choose(found)
    entry["path"] = {"path": path.path, "reason": path.reason,
                     "kubernetes": found.kubernetes, "power": found.power}
    out.facts += facts.path_facts(node, path.path, found.power)
    if path.path is None:
        out.block("shipyard", path.reason, node)
    fenced = path.path == fencing.FENCE_FIRST
    prom = _kubernetes(r, out, entry, ref, fenced, list(prepared.targets or []),
                       prepared.parameters)
    _baremetal(out, entry, drydock)
    entry["calls"] = _node_calls(node, fenced, {**query, **({"fenced": "true"} if fenced
                                                           else {}),
                                                **(disruption.query(prepared.parameters) or {})},
                                 prom, drydock, destroy_options(prepared.parameters))


def redeploy(r: Reader, prepared: Prepared) -> Composition:
    out, docs = open_design(r, prepared, f"No {prepared.parameters.get('target-revision')} "
                            "revision of the design exists; the action would stop at preflight")
    if docs is None:
        return out
    ref = str(out.design_ref)
    targets = list(prepared.targets or [])
    membership = etcd_membership(docs)
    query = dict(decommission_timeouts(deployment_configuration(docs)))
    try:
        preview = r.svc.drydock.task_preview("destroy_nodes", ref, node_names_filter(targets),
                                             destroy_options(prepared.parameters), ctx=r.rc)
    except BerthError as exc:
        _peer(out, "drydock", None, "preview destroy_nodes", exc)
        preview = {}
    by_node = {str(n.get("node")): n for n in map(as_object, as_list(preview.get("nodes")))}
    for node in targets:
        _one_node(r, out, node, ref, membership.get(node, []), query, by_node.get(node, {}),
                  prepared)
    _etcd_in_flight(r, out, targets, membership)
    _budgets(r, out, targets, ref, prepared.parameters.get("budget") == "refuse")
    return out


def _budgets(r: Reader, out: Composition, targets: list[str], ref: str, refuse: bool) -> None:
    """Failure domains of the targets with no slot free now (Drydock's dry run): with
    budget=refuse a blocker, else a warning that the node's chain would wait."""
    for node in targets:
        try:
            blockers = r.svc.drydock.check_budget_slot(budget.holder(r.rc.marker, node), node,
                                                       ref, ctx=r.rc)
        except BerthError as exc:
            _peer(out, "drydock", node, "check the node's failure-domain slots", exc)
            continue
        for b in blockers:
            text = str(b.get("message") or f"failure domain {b.get('domain')} is full")
            if refuse:
                out.block("drydock", f"{node}: {text} (budget=refuse)", node)
            else:
                out.warn("drydock", f"{node} would wait for its slot: {text}", node)


def _etcd_in_flight(r: Reader, out: Composition, targets: list[str],
                    membership: Mapping[str, list[str]]) -> None:
    """Running actions that also take out members of the targets' etcd clusters: their
    removals and ours are serialised, and each sees the cluster the other leaves."""
    mine = {c for t in targets for c in membership.get(t, [])}
    for action in r.active:
        theirs = {c for n in action.target_nodes or [] if n not in targets
                  for c in membership.get(n, [])} & mine
        if theirs:
            out.warn("shipyard", f"{action.name} {action.id} ({action.state}) also removes "
                     f"members of etcd cluster(s) {', '.join(sorted(theirs))}: the removals "
                     "run one at a time, each on the cluster the other leaves")


def relabel(r: Reader, prepared: Prepared) -> Composition:
    """Each node's design labels as Drydock reads the design (its node listing) and the
    PUT on Promenade that Shipyard's relabel step makes for it."""
    out, docs = open_design(r, prepared)
    if docs is None:
        return out
    wanted = set(prepared.targets) if prepared.targets else None
    try:
        views = r.svc.drydock.nodes(str(out.design_ref), ctx=r.rc)
    except BerthError as exc:
        _peer(out, "drydock", None, "list the design's nodes", exc)
        return out
    for view in views:
        node = str(view.get("hostname"))
        if wanted is not None and node not in wanted:
            continue
        labels = dict(view.get("labels") or {})
        out.nodes.append({"node": node, "labels": labels, "baremetal": {
            k: view.get(k) for k in ("maas_status", "retired")}})
        out.calls.append(labels_call(node, labels))
    return out
