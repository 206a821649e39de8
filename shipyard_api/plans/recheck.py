"""Steps of an action created from a plan re-check, when they start, the facts the plan
relied on, and stop with the differences before doing anything when one no longer holds.

    step                facts re-read (see plans/facts.py for the rules)
    assess_node         the node's path (graceful / fence-first) and BMC power state
    decommission        PDBs' disruptions allowed, eviction locks, etcd members healthy, learners
    destroy_nodes       BMC reachable, the wipe plan (each disk), refusal, retirement
    baremetal           each group's nodes, the retired nodes
"""

from __future__ import annotations

from dataclasses import replace

from common.errors import NotFound
from common.jsontypes import JSONObject, as_int, as_list, as_object
from common.workflow import Outcome, Retry, failed
from shipyard_api.actions import fencing, steps
from shipyard_api.actions.ports import services
from shipyard_api.actions.redeploy import destroy_options
from shipyard_api.clients.ports import node_names_filter
from shipyard_api.plans import facts, site
from shipyard_api.strategy.model import strategy_of
from shipyard_api.workflow.definitions import StepContext, StepFn

CHECKED = "plan_checked"


def _ref(ctx: StepContext) -> str:
    return str(steps.design(ctx)["design_ref"])


def _decommission(ctx: StepContext, node: str) -> list[facts.Fact]:
    targets = list(ctx.parameters.get("target_nodes") or [])
    preview = services(ctx).promenade.decommission_preview(
        node, _ref(ctx), fenced=fencing.path_of(ctx) == fencing.FENCE_FIRST,
        leaving=[t for t in targets if t != node], ctx=ctx.request_context())
    return facts.decommission_facts(node, preview, targets)


def _destroy(ctx: StepContext, node: str) -> list[facts.Fact]:
    preview = services(ctx).drydock.task_preview(
        "destroy_nodes", _ref(ctx), node_names_filter([node]), destroy_options(ctx.parameters),
        ctx=ctx.request_context())
    found = next((n for n in map(as_object, as_list(preview.get("nodes")))
                  if n.get("node") == node), {})
    return facts.destroy_facts(node, found)


def _baremetal(ctx: StepContext) -> list[facts.Fact]:
    svc = services(ctx)
    docs = svc.documents.rendered_documents(as_int(steps.design(ctx)["revision_id"]),
                                            cleartext=False)
    retired, deployment = site.selection(svc, ctx.request_context(), _ref(ctx),
                                         strategy_of(docs))
    return facts.group_facts({g: deployment.members[g] for g in deployment.order}, retired)


def current(ctx: StepContext) -> list[facts.Fact]:
    """The facts of this step as they are now, read like the plan read them."""
    node = ctx.node or ""
    if ctx.name == "assess_node":
        found = fencing.facts(ctx, node)
        return facts.path_facts(node, fencing.choose(found).path, found.power)
    if ctx.name == "decommission":
        return _decommission(ctx, node)
    if ctx.name == "destroy_nodes":
        return _destroy(ctx, node)
    if ctx.name == "baremetal":
        return _baremetal(ctx)
    return []


def guarded(run: StepFn) -> StepFn:
    """`run`, preceded on its first run by the re-check when the action has a plan."""

    def step(ctx: StepContext) -> Outcome:
        plan_id = ctx.parameters.get("plan_id")
        reader = services(ctx).plans
        if not plan_id or ctx.memo.get(CHECKED) or reader is None:
            return run(ctx)
        try:
            stored = reader.facts(str(plan_id))
        except NotFound:
            return failed("PlanNotFound", f"Plan {plan_id} is no longer stored: what it relied "
                          "on cannot be re-checked; this step did nothing")
        planned = [f for f in stored if f["step"] == ctx.step_id]
        changes = facts.compare(planned, current(ctx)) if planned else []
        if changes:
            return failed("PlanFactsChanged", f"Plan {plan_id}: what the plan relied on has "
                          f"changed: {facts.diff_text(changes)}; this step did nothing. Plan "
                          "again.", {"plan_id": plan_id, "changes": changes})
        outcome = run(ctx)
        if isinstance(outcome, Retry):
            memo: JSONObject = {**outcome.memo, CHECKED: True}
            return replace(outcome, memo=memo)
        return outcome

    return step
