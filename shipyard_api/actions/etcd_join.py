"""redeploy_server's join_etcd step: a control-plane node's etcd members back, learner first."""

from __future__ import annotations

from common.errors import Conflict
from common.workflow import Outcome, StepPolicy, done, failed, retry_after
from shipyard_api.actions import steps
from shipyard_api.actions.ports import services
from shipyard_api.workflow.definitions import StepContext

KP = "kubernetes_provisioner"
# Promenade's 409s that a later attempt may clear: quorum or threshold at risk now, another
# membership change or learner in the way, a learner that did not catch up (removed again).
PASSING = {"JoinEtcdRefused", "LearnerNotCaughtUp", "RequestInProgress"}
RETRY_DELAY = 10.0


def join_etcd(ctx: StepContext) -> Outcome:
    """After the node is Ready and relabelled (its etcd starts once added): Promenade adds
    each of its members as a learner and promotes it once in sync; a node of no etcd
    cluster is done at once. A refusal for now is asked again until the step's timeout."""
    assert ctx.node is not None
    node, d = ctx.node, steps.design(ctx)
    clusters = sorted((d.get("etcd") or {}).get(node, []))
    if not clusters:
        return done(note=f"{node} has no etcd member: nothing to join")
    svc = services(ctx)
    timeout = int(steps.config_value(ctx, KP, "etcd_ready_timeout"))
    try:
        body = svc.promenade.join_etcd(node, str(d["design_ref"]), timeout,
                                       ctx=ctx.request_context(), key=ctx.key())
    except Conflict as exc:
        if exc.instance_reason in PASSING:
            return retry_after(RETRY_DELAY, note=f"Promenade: {exc.message}; asking again "
                               f"in {RETRY_DELAY:g} s", details={"refusal": exc.to_status()})
        return failed(exc.instance_reason, exc.message, exc.to_status())
    return done(details={"promenade": body},
                note=f"etcd member(s) of {node} in {', '.join(clusters)} joined as learners "
                     "and were promoted to voting members once in sync")


def policy(ctx: StepContext) -> StepPolicy:
    """Promenade's own bound (etcd_ready_timeout) for each attempt, twice over for retries."""
    timeout = steps.config_value(ctx, KP, "etcd_ready_timeout")
    return services(ctx).settings.policy(2 * timeout + 120)
