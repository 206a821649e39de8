"""redeploy_server: decommission, destroy, remove from the cluster, redeploy, relabel."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from common.clients.promenade import DrainProgress
from common.context import RequestContext
from common.errors import BadGateway, BerthError, Conflict, NotFound, ValidationFailed
from common.jsontypes import JSONObject, as_float
from common.status import validation_message
from common.workflow import Outcome, StepPolicy, done, failed, retry_after
from shipyard_api.actions import (
    bootactions,
    budget,
    disruption,
    etcd_join,
    fencing,
    labels,
    power,
    progress,
    steps,
)
from shipyard_api.actions.design import decommission_timeouts
from shipyard_api.actions.known import refuse_unknown
from shipyard_api.actions.params import REVISIONS, Params, version_of
from shipyard_api.actions.ports import DocumentsPort, Services, services
from shipyard_api.clients.ports import node_names_filter, node_ready
from shipyard_api.workflow.definitions import (
    ActionDefinition,
    ActionParameters,
    Prepared,
    StepContext,
    StepDef,
)

NAME = "redeploy_server"
PARAMS = ("target_nodes", "preserve-local-storage", "target-revision", "os-disk-erase", "erase",
          *disruption.PARAMS,
          "budget", *power.PARAMS)
OS_DISK_ERASE = ("bmc", "none")
ERASE = ("secure", "secure-only", "quick", "zero")
# Promenade's 409 reasons that mean "the request with this key still runs", not a refusal.
IN_PROGRESS = frozenset({"RequestInProgress", "IdempotencyKeyInProgress"})


def prepare(raw: Mapping[str, object], documents: DocumentsPort) -> Prepared:
    """Validate parameters; node names the design does not hold are refused (known.py)."""
    p = Params(raw, PARAMS)
    targets = p.nodes("target_nodes", required=True)
    preserve = p.boolean("preserve-local-storage")
    revision_name = p.choice("target-revision", REVISIONS, "successful-site-action")
    wipe = _wipe_params(p, raw, preserve)
    over_budget = p.choice("budget", budget.CHOICES, "wait")
    leave = disruption.read(p)
    power_off = power.read(p)
    p.raise_if_invalid()
    revision = documents.revision_id(version_of(revision_name))
    refuse_unknown(targets, documents, revision)
    params: ActionParameters = {"target_nodes": targets, "preserve-local-storage": preserve,
              "target-revision": revision_name, **wipe, **leave, "budget": over_budget,
              **power_off}
    return Prepared(params, targets, revision)


def _wipe_params(p: Params, raw: Mapping[str, object], preserve: bool) -> ActionParameters:
    """os-disk-erase (with preserve-local-storage): bmc, or none (the redeploy overwrites the
    OS disk; nothing erases it). erase (full wipes): secure, secure-only, quick, zero."""
    out: ActionParameters = {}
    if "os-disk-erase" in raw:
        out["os-disk-erase"] = p.choice("os-disk-erase", OS_DISK_ERASE, "bmc")
        if not preserve:
            p.problem("Parameter os-disk-erase needs preserve-local-storage=true")
    if "erase" in raw:
        out["erase"] = p.choice("erase", ERASE, "secure")
        if preserve:
            p.problem("Parameter erase is for full wipes: not with preserve-local-storage=true")
    return out


def destroy_options(params: ActionParameters) -> JSONObject:
    options: JSONObject = {"preserve_local_storage":
                               bool(params.get("preserve-local-storage", False))}
    if params.get("os-disk-erase"):
        options["os_disk_erase"] = params["os-disk-erase"]
    if params.get("erase"):
        options["erase"] = str(params["erase"]).replace("-", "_")
    return {**options, **power.options(params)}


def admit(prepared: Prepared, svc: Services, ctx: RequestContext) -> None:
    """Before anything is touched: every target is a node Drydock may redeploy (not retired)
    and can tear down as asked (each wipe real: see Drydock's wipe plan). 400 naming each."""
    if prepared.revision_id is None or not prepared.targets:
        return  # preflight reports the missing revision
    design_ref = svc.documents.design_ref(prepared.revision_id, svc.settings.public_url)
    targets = list(prepared.targets)
    problems = [f"{n['hostname']} is retired"
                + (f" ({n['retired_reason']})" if n.get("retired_reason") else "")
                + ": a retired node is never redeployed; unretire it first"
                for n in svc.drydock.nodes(design_ref, ctx=ctx, retired=True)
                if n.get("hostname") in targets and n.get("retired")]
    plans = svc.drydock.wipe_plan(design_ref, targets, destroy_options(prepared.parameters),
                                  ctx=ctx)
    problems += [str(plan["refusal"]) for plan in plans if plan.get("refusal")]
    if problems:
        raise ValidationFailed("redeploy_server refused: " + "; ".join(problems),
                               reason="RedeployRefused", messages=[
                                   validation_message(p, name="RedeployPreflight")
                                   for p in problems])
    if prepared.parameters.get("budget") == "refuse":
        budget.take_or_refuse(svc, design_ref, targets, ctx, NAME)


def _node(ctx: StepContext) -> str:
    assert ctx.node is not None
    return ctx.node


def decommission(ctx: StepContext) -> Outcome:
    svc = services(ctx)
    d = steps.design(ctx)
    timeouts = decommission_timeouts(d["config"])
    fenced = fencing.path_of(ctx) == fencing.FENCE_FIRST
    rc = ctx.request_context()

    def record(drain: DrainProgress) -> None:
        ctx.report({"drain": drain})

    try:
        body, drain = progress.follow(
            lambda: svc.promenade.decommission(_node(ctx), str(d["design_ref"]), timeouts,
                                               ctx=rc, key=ctx.key(), fenced=fenced,
                                               disrupt=disruption.query(ctx.parameters)),
            lambda: progress.drain_record(svc.promenade.node_status(_node(ctx), ctx=rc),
                                          ctx.marker),
            record, interval=svc.settings.progress_interval)
    except BadGateway as exc:
        peer = exc.peer_status or {}
        if peer.get("reason") == "DisassociateStepFailure":
            return failed("DisassociateStepFailure", str(peer.get("message") or exc),
                          {"promenade": peer, **disruption.step_details(peer)})
        raise
    except (NotFound, Conflict) as exc:
        wait = in_progress(exc)
        if wait is not None:  # the same decommission (this key) still runs: not a refusal
            return retry_after(wait, note=f"Promenade is still decommissioning the node "
                               f"(same request); asking again in {wait:g} s")
        return failed(exc.instance_reason, exc.message, exc.to_status())
    how = "fenced: pods removed by the out-of-service taint" if fenced else "drained"
    details = {"promenade": body, **({"drain": drain} if drain else {}),
               **disruption.step_details(body)}
    return done(details=details, note=f"Promenade decommissioned the node ({how})")


def in_progress(exc: BerthError) -> float | None:
    """Seconds to wait when Promenade's 409 says the request under this Idempotency-Key is
    still running (RequestInProgress: the first attempt, or one left by a Promenade process
    that died, whose lease runs out); None for a refusal (PDB, quorum, not Ready, cancelled),
    which is final. A replay of a finished request is answered 2xx, never 409."""
    if not isinstance(exc, Conflict) or exc.instance_reason not in IN_PROGRESS:
        return None
    peer = exc.details.get("peer_status") or {}
    after = (peer.get("details") or {}).get("retry_after") if isinstance(peer, dict) else None
    try:
        return min(max(float(after), 0.5), 30.0) if after is not None else 5.0
    except (TypeError, ValueError):
        return 5.0


def cancel_decommission(ctx: StepContext) -> None:
    services(ctx).promenade.cancel_decommission(_node(ctx), ctx=ctx.request_context())


def decommission_policy(ctx: StepContext) -> StepPolicy:
    timeouts = decommission_timeouts(steps.design(ctx)["config"])
    total = sum(v for k, v in timeouts.items() if k != "drain-node-grace-period")
    return services(ctx).settings.policy(total + 120)


def etcd_clusters(ctx: StepContext) -> set[str]:
    """Decommission holds the node's etcd clusters: one member of a cluster at a time."""
    etcd = steps.design(ctx).get("etcd") or {}
    return {f"etcd:{name}" for name in etcd.get(_node(ctx), [])}


def destroy(ctx: StepContext) -> Outcome:
    outcome = steps.drydock_task(ctx, "destroy_nodes", node_names_filter([_node(ctx)]),
                                 destroy_options(ctx.parameters),
                                 steps.config_value(ctx, "physical_provisioner",
                                                    "destroy_interval"))
    disks = disk_report(outcome.details.get("task"))
    if disks:
        outcome.details["disks"] = disks  # the step shows each disk: kept or wiped, and how
    return power.with_report(outcome)


def disk_report(task: object) -> list[JSONObject]:
    """Drydock's per-disk messages of a destroy task: disk, result, method, verified_by, at."""
    result = task.get("result") if isinstance(task, dict) else None
    details = result.get("details") if isinstance(result, dict) else None
    messages = details.get("messageList") if isinstance(details, dict) else None
    if not isinstance(messages, list):
        return []
    return [{k: m.get(k) for k in ("disk", "result", "method", "verified_by", "at")}
            for m in messages if isinstance(m, dict) and m.get("step") == "report_disks"
            and "disk" in m]


def remove_from_cluster(ctx: StepContext) -> Outcome:
    svc = services(ctx)
    try:
        body = svc.promenade.remove_from_cluster(_node(ctx), ctx=ctx.request_context(),
                                                 key=ctx.key())
    except NotFound:
        return done(note="The node was already absent from Kubernetes")
    except Conflict as exc:
        wait = in_progress(exc)
        if wait is not None:
            return retry_after(wait, note="Promenade is still removing the node (same "
                               f"request); asking again in {wait:g} s")
        return failed("RemoveFromClusterRefused", exc.message, exc.to_status())
    return done(details={"promenade": body}, note="Removed from the Kubernetes cluster")


def prepare_node(ctx: StepContext) -> Outcome:
    return steps.drydock_task(ctx, "prepare_nodes", node_names_filter([_node(ctx)]), {},
                              steps.config_value(ctx, "physical_provisioner",
                                                 "prepare_node_interval"))


def deploy_node(ctx: StepContext) -> Outcome:
    return steps.drydock_task(ctx, "deploy_nodes", node_names_filter([_node(ctx)]), {},
                              steps.config_value(ctx, "physical_provisioner", "deploy_interval"))


def wait_ready(ctx: StepContext) -> Outcome:
    """Until the Kubernetes node is Ready: each attempt long-polls Promenade (answered when
    the Node changes). A Promenade that cannot (without versions, or too busy to hold the
    request) is asked again FIRST_POLL s after the step's first look, then every tenth of the
    time waited, at most every node_status_interval."""
    svc = services(ctx)
    since = ctx.memo.get("version")
    first = as_float(ctx.memo.get("first_look"), ctx.now)
    watch = svc.promenade.watch_node(_node(ctx), since=None if since is None else str(since),
                                     wait=svc.settings.long_poll_wait,
                                     ctx=ctx.request_context())
    status = watch.status
    if node_ready(status):
        return done(details={"node": status or {}}, note="The Kubernetes node is Ready")
    if watch.version is None or watch.busy or svc.settings.long_poll_wait <= 0:
        return retry_after(steps.node_status_backoff(ctx, first),
                           memo={"version": None, "first_look": first},
                           details={"node": status or {}})
    return retry_after(0, memo={"version": watch.version, "first_look": first},
                       details={"node": status or {}})


def relabel(ctx: StepContext) -> Outcome:
    """The node's design labels, put on Promenade (Shipyard's own Kubernetes-side step)."""
    return labels.put_design_labels(ctx, [_node(ctx)])


def _timeout(section: str, key: str) -> Callable[[StepContext], StepPolicy]:
    def policy(ctx: StepContext) -> StepPolicy:
        return services(ctx).settings.policy(steps.config_value(ctx, section, key))
    return policy


held = budget.guarded  # the step runs only while the node's failure-domain slots are held


def definition() -> ActionDefinition:
    pp = "physical_provisioner"
    return ActionDefinition(NAME, [
        StepDef("preflight", steps.preflight, steps.preflight_policy),
        StepDef("resolve_design", steps.resolve_design, steps.preflight_policy),
        StepDef("assess_node", fencing.assess, steps.preflight_policy, per_node=True),
        StepDef(budget.TAKE, budget.take, _timeout(pp, "destroy_timeout"), per_node=True),
        StepDef("fence_node", held(fencing.fence), _timeout(pp, "destroy_timeout"),
                per_node=True, cancel=steps.terminate_task),
        StepDef("decommission", held(decommission), decommission_policy, per_node=True,
                exclusive=etcd_clusters, cancel=cancel_decommission),
        StepDef("destroy_nodes", held(destroy), _timeout(pp, "destroy_timeout"),
                per_node=True, cancel=steps.terminate_task),
        StepDef("remove_from_cluster", held(remove_from_cluster), steps.preflight_policy,
                per_node=True),
        StepDef("prepare_nodes", held(prepare_node), _timeout(pp, "prepare_node_timeout"),
                per_node=True, cancel=steps.terminate_task),
        StepDef("deploy_nodes", held(deploy_node), _timeout(pp, "deploy_timeout"),
                per_node=True, cancel=steps.terminate_task),
        StepDef("wait_boot_actions", held(bootactions.wait_boot_actions), bootactions.policy,
                per_node=True),
        StepDef("wait_node_ready", held(wait_ready),
                _timeout("kubernetes", "node_status_timeout"), per_node=True),
        StepDef("relabel_nodes", held(relabel), _timeout(pp, "relabel_nodes_timeout"),
                per_node=True),
        StepDef("join_etcd", held(etcd_join.join_etcd), etcd_join.policy, per_node=True),
        StepDef(budget.RELEASE, budget.release, steps.preflight_policy, per_node=True),
    ], prepare, admit=admit, finish=budget.finish)
