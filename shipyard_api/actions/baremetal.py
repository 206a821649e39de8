"""deploy_site / update_site's baremetal step: the deployment strategy's groups, one at a time,
each prepared then deployed through Drydock (spec 001 "Process").

The step keeps the whole `Deployment` (node and group statuses) and the Drydock call in
flight in its memo, so every run is short (one poll, or one new task) and a restarted worker
resumes where the last one stopped; tasks are created with idempotency keys per group and
phase, so a repeated run never starts a second task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from common.clients.drydock import FINISHED
from common.context import RequestContext
from common.documents import Document
from common.errors import BerthError
from common.jsontypes import JSONObject, as_object
from common.workflow import (
    Failed,
    Outcome,
    StepPolicy,
    done,
    failed,
    retry_after,
)
from shipyard_api.actions import budget, steps
from shipyard_api.actions.ports import services
from shipyard_api.clients.ports import DrydockPort, node_names_filter, node_ready
from shipyard_api.documents.validation import shipyard_checks
from shipyard_api.strategy.checks import check_strategy
from shipyard_api.strategy.model import Strategy, strategy_document, strategy_of
from shipyard_api.strategy.order import CircularDependency
from shipyard_api.strategy.progress import (
    DEPLOY,
    FAILED,
    SUCCESS,
    Call,
    Deployment,
    group_summary,
)
from shipyard_api.strategy.selectors import NodeIndex, node_filter, without_retired
from shipyard_api.workflow.definitions import StepContext

LOG = logging.getLogger(__name__)
MEMO = "baremetal"
# phase -> DeploymentConfiguration keys of its poll interval and its per-call timeout
PHASE_CONFIG = {"prepare": ("prepare_node_interval", "prepare_node_timeout"),
                DEPLOY: ("deploy_interval", "deploy_timeout")}


# Drydock as the baremetal step needs it: tasks, node records, and node filters.
NodeSelectionPort = DrydockPort


def _drydock(ctx: StepContext) -> DrydockPort:
    return services(ctx).drydock


def _memo(ctx: StepContext) -> JSONObject | None:
    """The step's own record (the deployment and the call in flight); None before the plan."""
    state = ctx.memo.get(MEMO)
    return None if state is None else as_object(state)


def _config(ctx: StepContext, key: str) -> float:
    return steps.config_value(ctx, "physical_provisioner", key)


def validate_design(ctx: StepContext) -> Outcome:
    """Shipyard's own design rules on the revision: its DeploymentConfiguration and the
    DeploymentStrategy it names (names, dependencies, labels, criteria, selected nodes)."""
    revision = int(steps.design(ctx)["revision_id"])
    docs = services(ctx).documents.rendered_documents(revision, cleartext=False)
    problems = [m for m in shipyard_checks(docs) if m.get("error")]
    if problems:
        return failed("InvalidDesign", f"Revision {revision} breaks {len(problems)} of "
                      "Shipyard's design rules", {"messageList": problems})
    strategy = strategy_of(docs)
    return done(details={"strategy": strategy.name, "groups": len(strategy.groups)},
                note=f"Deployment strategy {strategy.name} valid "
                f"({len(strategy.groups)} group(s))")


def baremetal(ctx: StepContext) -> Outcome:
    """One run: settle the call in flight, then start the next one (or finish)."""
    state = _memo(ctx)
    if state is None:
        return _plan(ctx)
    deployment = Deployment.from_dict(as_object(state["deployment"]))
    pending = state.get("call")
    if pending is not None:
        waiting = _poll(ctx, deployment, as_object(pending))
        if waiting is not None:
            return waiting
    return _advance(ctx, deployment)


def _plan(ctx: StepContext) -> Outcome:
    """Read the strategy, check it, and select each group's nodes from Drydock's listing."""
    design = steps.design(ctx)
    docs = services(ctx).documents.rendered_documents(int(design["revision_id"]),
                                                      cleartext=False)
    planned = plan_deployment(docs, _drydock(ctx), str(design["design_ref"]),
                              ctx.request_context())
    if isinstance(planned, Failed):
        return planned
    deployment, retired = planned
    strategy = deployment.strategy
    LOG.info("Action %s: strategy %s, %d groups, %d nodes (%d retired left out)",
             ctx.action_id, strategy.name, len(strategy.groups), len(deployment.nodes),
             len(retired))
    return _advance(ctx, deployment, note=f"Strategy {strategy.name}: "
                    f"{len(strategy.groups)} group(s), {len(deployment.nodes)} node(s)")


def plan_deployment(docs: list[Document], drydock: DrydockPort, ref: str,
                    rc: RequestContext) -> Failed | tuple[Deployment, list[str]]:
    """The design's strategy checked, its groups' nodes selected and its groups ordered (the
    deployment and the retired nodes left out), or why it cannot be planned."""
    doc = strategy_document(docs)
    strategy = strategy_of(docs)
    if doc is not None:
        problems = check_strategy(doc.get("data"), {"schema": str(doc.get("schema")),
                                                    "name": strategy.name})
        if problems:
            return failed("InvalidDeploymentStrategy",
                          f"Deployment strategy {strategy.name} is invalid",
                          {"messageList": problems})
    retired, members = select_groups(drydock, ref, strategy, rc)
    try:
        return Deployment(strategy, members), retired
    except CircularDependency as exc:
        return failed("InvalidDeploymentStrategy", str(exc))


def select_groups(drydock: DrydockPort, ref: str, strategy: Strategy,
                  rc: RequestContext) -> tuple[list[str], dict[str, list[str]]]:
    """The retired nodes, and each group's nodes in design order, retired ones left out.

    One Drydock node listing of the design, then every group selected locally with Drydock's
    node filter semantics (`NodeIndex`), instead of one node filter call per group. A group
    naming nodes outside the design is asked of Drydock's node filter, which refuses it
    (400 UnknownNodes) as it always did."""
    index = NodeIndex.of_listing(drydock.nodes(ref, ctx=rc))
    index.prepare(s for group in strategy.groups for s in group.selectors)
    known = set(index.order)
    retired = [index.order[i] for i in sorted(index.retired)]
    members = {}
    for group in strategy.groups:
        if all(name in known for s in group.selectors for name in s.node_names):
            members[group.name] = index.select(group)
        else:
            members[group.name] = without_retired(
                drydock.select_nodes(ref, node_filter(group), ctx=rc), retired)
    return retired, members


def _poll(ctx: StepContext, deployment: Deployment,
          pending: Mapping[str, Any]) -> Outcome | None:
    """None once the call is settled; a Retry while its task still runs."""
    call = Call(pending["group"], pending["phase"], tuple(pending["nodes"]))
    if "ready" in pending:
        return _await_ready(ctx, deployment, call, pending)
    task_id = str(pending["task_id"])
    interval = _config(ctx, PHASE_CONFIG[call.phase][0])
    try:
        task = _drydock(ctx).get_task(task_id, ctx=ctx.request_context())
    except BerthError as exc:
        if not exc.instance_retry or ctx.now >= float(pending["deadline"]):
            raise
        return retry_after(interval, note=f"Drydock task {task_id} unreadable for now: "
                           f"{exc.message}", details=_report(deployment, task_id))
    if str(task.get("status")) in FINISHED:
        result = task.get("result") if isinstance(task.get("result"), dict) else {}
        successes = [str(n) for n in (result or {}).get("successes") or []]
        if call.phase == DEPLOY and successes:
            deadline = ctx.now + steps.config_value(ctx, "kubernetes", "node_status_timeout")
            return _await_ready(ctx, deployment, call, {
                **pending, "ready": {"nodes": successes, "joined": [], "since": ctx.now,
                                     "deadline": deadline}})
        deployment.record(call, successes)
        return None
    if ctx.now >= float(pending["deadline"]):
        limit = _config(ctx, PHASE_CONFIG[call.phase][1])
        try:
            cancel(ctx)  # the group's time is up: its task stops too
        except BerthError as exc:
            LOG.warning("Action %s: could not terminate Drydock task %s: %s", ctx.action_id,
                        task_id, exc.message)
        deployment.record_failure(call, f"Drydock {call.action} task {task_id} did not "
                                  f"finish within {limit:g} s; it was terminated")
        return None
    report = _report(deployment, task_id)
    blocked = budget.waiting_in(task)  # Drydock holds back nodes of a full failure domain
    if blocked is not None:
        report["blocked"] = blocked
    return retry_after(interval, details=report)


def _await_ready(ctx: StepContext, deployment: Deployment, call: Call,
                 pending: Mapping[str, Any]) -> Outcome | None:
    """A deployed node succeeds once its Kubernetes node is Ready (Shipyard owns readiness,
    as Airship's deployment step checks node status after deploy_nodes); one not Ready within
    `kubernetes.node_status_timeout` fails. None once the group's deploy is settled."""
    ready = pending["ready"]
    svc, rc = services(ctx), ctx.request_context()
    joined = list(ready["joined"])
    joined += [n for n in ready["nodes"]
               if n not in joined and node_ready(svc.promenade.node_status(n, ctx=rc))]
    late = [n for n in ready["nodes"] if n not in joined]
    if not late or ctx.now >= float(ready["deadline"]):
        deployment.record(call, joined, why="not Ready in Kubernetes within "
                          f"{float(ready['deadline']) - float(ready['since']):g} s")
        return None
    pending = {**pending, "ready": {**ready, "joined": joined}}
    # soon after the deploy (a node joins seconds to minutes after it), then every interval
    return retry_after(steps.node_status_backoff(ctx, float(ready["since"])),
                       memo={MEMO: {"deployment": deployment.to_dict(), "call": pending}},
                       details=_report(deployment, str(pending["task_id"])),
                       note=f"deploy {call.group}: {len(joined)} node(s) Ready in Kubernetes, "
                            f"waiting for {', '.join(late[:5])}"
                            + (f" and {len(late) - 5} more" if len(late) > 5 else ""))


def _advance(ctx: StepContext, deployment: Deployment, note: str = "") -> Outcome:
    """Start the next Drydock call; a refused one fails its group and the next is tried."""
    rc = ctx.request_context()
    ref = str(steps.design(ctx)["design_ref"])
    while (call := deployment.next_call()) is not None:
        try:
            task = _drydock(ctx).create_task(call.action, ref, node_names_filter(
                list(call.nodes)), {}, ctx=rc, key=ctx.key(call.group, call.phase))
        except BerthError as exc:
            if exc.instance_retry:
                raise  # Drydock unreachable or busy: the engine retries this run
            deployment.record_failure(call, f"Drydock refused {call.action}: {exc.message}")
            continue
        interval, timeout = (_config(ctx, k) for k in PHASE_CONFIG[call.phase])
        task_id = str(task.get("task_id"))
        pending = {"group": call.group, "phase": call.phase, "nodes": list(call.nodes),
                   "task_id": task_id, "deadline": ctx.now + timeout}
        memo = {MEMO: {"deployment": deployment.to_dict(), "call": pending}}
        return retry_after(interval, memo=memo, details=_report(deployment, task_id),
                           note=note or f"{call.phase} {call.group}: Drydock task {task_id} "
                           f"for {len(call.nodes)} node(s)")
    return _finish(ctx, deployment)


def _finish(ctx: StepContext, deployment: Deployment) -> Outcome:
    for group in deployment.strategy.groups:
        LOG.info("Action %s: %s", ctx.action_id, group_summary(group, deployment))
    report = _report(deployment, None)
    critical = deployment.failed_critical()
    if critical:
        return failed("CriticalGroupFailed",
                      f"Critical group(s) failed: {', '.join(critical)}", report)
    failed_groups = [g for g, s in deployment.status.items() if s == FAILED]
    note = (f"All {len(deployment.order)} group(s) succeeded" if not failed_groups else
            f"Non-critical group(s) failed: {', '.join(failed_groups)}")
    deployed = [n for n, s in deployment.nodes.items() if s == SUCCESS]
    return done({"nodes": deployment.nodes, "deployed": deployed}, details=report, note=note)


def _report(deployment: Deployment, task_id: str | None) -> dict[str, object]:
    report = deployment.report()
    report["processing"] = [f"{h['phase']} {h['group']}: {h['result']}"
                            + (f" ({h['detail']})" if h["detail"] else "")
                            for h in deployment.history]
    report["drydock_task"] = task_id
    return report


def cancel(ctx: StepContext) -> None:
    """Stop or timeout: the Drydock task of the group in flight stops at a safe point."""
    pending = (_memo(ctx) or {}).get("call")
    if pending is not None:
        _drydock(ctx).terminate_task(str(as_object(pending)["task_id"]),
                                     ctx=ctx.request_context())


def baremetal_policy(ctx: StepContext) -> StepPolicy:
    """Bounded by every group's prepare, deploy and readiness timeouts (each has its own
    bound)."""
    state = _memo(ctx)
    groups = len(as_object(as_object(state["deployment"])["status"])) if state else 1
    per_group = _config(ctx, "prepare_node_timeout") + _config(ctx, "deploy_timeout") \
        + steps.config_value(ctx, "kubernetes", "node_status_timeout")
    return services(ctx).settings.policy(max(1, groups) * per_group + 600)
