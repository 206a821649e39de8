"""redeploy_server's wait_boot_actions: the redeployed node's boot action reports (Drydock),
so the node joined by its own join script, not only that MAAS deployed it."""

from __future__ import annotations

from collections.abc import Sequence

from common.clients.generated.drydock import BootAction
from common.jsontypes import as_float
from common.workflow import Outcome, StepPolicy, done, failed, retry_after
from shipyard_api.actions import steps
from shipyard_api.actions.ports import services
from shipyard_api.workflow.definitions import StepContext

SECTION, TIMEOUT = "kubernetes", "node_status_timeout"
# Each look reads Drydock's node view, which asks the node's BMC for its power state: looks
# are at least this far apart (Ironic's default spacing of commands to one BMC).
BMC_PACE = 5.0


def _names(actions: Sequence[BootAction]) -> str:
    return ", ".join(f"{a.get('action_name')} ({a.get('action_id')})" for a in actions)


def _errors(actions: Sequence[BootAction]) -> str:
    texts = [str(d.get("message")) for a in actions for d in a.get("details") or []
             if isinstance(d, dict) and d.get("error")]
    return "; ".join(texts) or "no error message in the report"


def wait_boot_actions(ctx: StepContext) -> Outcome:
    """Done when every signaling boot action of the node's deploy reported success (or the
    node has none); failed at a failure report (its messages are the reason) or when no
    report came within kubernetes.node_status_timeout (naming the missing ones). A host
    reports seconds to minutes after MAAS deployed it: Drydock is asked again BMC_PACE s
    after the first look, then every tenth of the time waited, at most every
    kubernetes.node_status_interval, so a report is seen at most 5 s or 10 % of the wait
    late rather than a whole interval."""
    assert ctx.node is not None
    node, svc = ctx.node, services(ctx)
    view = svc.drydock.node(node, str(steps.design(ctx)["design_ref"]),
                                               ctx=ctx.request_context())
    actions = [a for a in view.get("bootactions") or [] if isinstance(a, dict)]
    refused = list(view.get("bootaction_refusals") or [])
    details = {"bootactions": actions, "bootaction_refusals": refused}
    if not actions:
        return done(details=details, note=f"No boot actions for {node} in the design")
    bad = [a for a in actions if a.get("action_status") == "failure"]
    if bad:
        return failed("BootActionFailed", f"Boot action {_names(bad)} of {node} reported "
                      f"failure: {_errors(bad)}", details)
    waiting = [a for a in actions if a.get("action_status") == "incomplete"]
    if not waiting:
        return done(details=details, note=f"{node} reported its boot actions: "
                    f"{_names(actions)} success")
    since = as_float(ctx.memo.get("since") or ctx.now, ctx.now)
    limit = steps.config_value(ctx, SECTION, TIMEOUT)
    if ctx.now - since > limit:
        why = f"; Drydock refused the node's requests: {refused[-1].get('reason')}" \
            if refused else ""
        return failed("BootActionReportMissing", f"No report of boot action "
                      f"{_names(waiting)} from {node} within {limit:g} s{why}", details)
    seen = f" (Drydock refused the node: {refused[-1].get('reason')})" if refused else ""
    return retry_after(steps.node_status_backoff(ctx, since, first=BMC_PACE), memo={"since": since},
                       details=details, note=f"Waiting for {node}'s report of boot action "
                       f"{_names(waiting)}{seen}")


def policy(ctx: StepContext) -> StepPolicy:
    """The engine's bound is a minute past the step's own (which names the missing report)."""
    return services(ctx).settings.policy(steps.config_value(ctx, SECTION, TIMEOUT) + 60)
