"""The relabel steps: each node's design labels (its `owner_data`, as Drydock reads the design
with host profiles applied) put on its Kubernetes node through Promenade. Shipyard owns every
Kubernetes-side step (decommission, remove-from-cluster, readiness, labels); Drydock owns bare
metal, so Berth's workflows never route labels through Drydock's relabel_nodes task."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from common.clients.drydock import Node
from common.errors import NotFound
from common.jsontypes import as_float, as_list
from common.workflow import Outcome, done, failed, retry_after
from shipyard_api.actions import steps
from shipyard_api.actions.ports import services
from shipyard_api.workflow.definitions import StepContext

PARALLEL_PUTS = 8  # label PUTs to Promenade at once


def design_labels(ctx: StepContext, targets: list[str] | None) -> dict[str, dict[str, str]]:
    """Node -> its design labels: the targets (one node: Drydock's view of it; several: one
    listing), or every node of the design when `targets` is None."""
    svc, rc = services(ctx), ctx.request_context()
    ref = str(steps.design(ctx)["design_ref"])
    if targets is not None and len(targets) == 1:
        views: list[Node] = [{**svc.drydock.node(targets[0], ref, ctx=rc),
                              "hostname": targets[0]}]
    else:
        views = list(svc.drydock.nodes(ref, ctx=rc))
    wanted = None if targets is None else set(targets)
    return {str(v["hostname"]): {str(k): str(val) for k, val in (v.get("labels") or {}).items()}
            for v in views if v.get("hostname") and (wanted is None or v["hostname"] in wanted)}


def put_design_labels(ctx: StepContext, targets: list[str] | None) -> Outcome:
    """PUT each node's design labels on Promenade (idempotent: the node ends with exactly
    those labels, kubernetes.io ones kept). A node Kubernetes does not know (yet: it may
    still be joining) is asked again every `relabel_nodes_interval` until
    `relabel_nodes_timeout`, then fails the step; a node not in the design fails it at once."""
    svc, rc = services(ctx), ctx.request_context()
    labels = design_labels(ctx, targets)
    labelled = set(as_list(ctx.memo.get("labelled")))
    outside = {n: "not a node of the design" for n in sorted(set(targets or []) - set(labels))}
    absent: dict[str, str] = {}

    def put(node: str) -> str | None:
        """None once the labels are on the node, else why not (not in Kubernetes)."""
        try:
            svc.promenade.put_labels(node, labels[node], ctx=rc)
        except NotFound as exc:
            return exc.message
        return None

    todo = [n for n in labels if n not in labelled]
    with ThreadPoolExecutor(max_workers=PARALLEL_PUTS) as pool:  # a site has many nodes
        for node, why in zip(todo, pool.map(put, todo), strict=True):
            if why is None:
                labelled.add(node)
            else:
                absent[node] = why
    pp = "physical_provisioner"
    since = as_float(ctx.memo.get("absent_since", ctx.now), ctx.now)
    if absent and not outside and ctx.now - since < steps.config_value(
            ctx, pp, "relabel_nodes_timeout"):
        return retry_after(steps.config_value(ctx, pp, "relabel_nodes_interval"),
                           memo={"labelled": sorted(labelled), "absent_since": since},
                           note="Waiting for " + ", ".join(sorted(absent)[:5])
                           + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
                           + " to join Kubernetes")
    if absent or outside:
        return failed("RelabelFailed", "Labels not set on " + "; ".join(
            f"{n}: {why}" for n, why in sorted({**absent, **outside}.items())),
            {"labels": labels})
    shown = ", ".join(f"{k}={v}" for k, v in sorted(next(iter(labels.values())).items())) \
        if len(labels) == 1 else f"{len(labels)} node(s)"
    return done(details={"labels": labels},
                note=f"Kubernetes labels set from the design through Promenade: "
                     f"{shown or 'none'}")
