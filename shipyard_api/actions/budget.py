"""Failure-domain budgets in actions: before a node goes out of service its slot of every
failure domain is taken in Drydock (waiting, or refusing, when one is full), held while the
node is out (each later step renews it, and so does the worker running the action), and
given back once the node is in service again or the action ends."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from common.clients.drydock import BudgetSlots
from common.context import RequestContext
from common.errors import BerthError, Conflict, NotFound
from common.failurelog import FailureLog
from common.jsontypes import JSONObject, as_list, as_object
from common.status import simple_message
from common.workflow import Outcome, done, failed, retry_after
from shipyard_api.actions import steps
from shipyard_api.actions.ports import Services, services
from shipyard_api.workflow.definitions import FinishContext, StepContext, StepFn
from shipyard_api.workflow.models import ActionRow, StepRow
from shipyard_api.workflow.states import TERMINAL_STEP, StepState
from shipyard_api.workflow.store import ActionStore

LOG = logging.getLogger(__name__)
CHOICES = ("wait", "refuse")
TAKE, RELEASE = "take_budget_slot", "release_budget_slot"
EXHAUSTED = "BudgetExhausted"
WAIT_INTERVAL = 2.0  # how often a waiting step asks for its slot again (s)


def holder(marker: str, node: str) -> str:
    """The slot holder of one node of one action (markers are UUIDs; a node is in one
    active action at a time)."""
    return f"shipyard:{marker}:{node}"


def blockers_of(exc: BerthError) -> list[JSONObject]:
    """Drydock's blockers (domain, budget, holders, message) from its 409."""
    peer = exc.details.get("peer_status") or {}
    found = (peer.get("details") or {}).get("blockers") if isinstance(peer, dict) else None
    return [b for b in found or [] if isinstance(b, dict)]


def describe(blockers: Sequence[Mapping[str, object]], fallback: str) -> str:
    return "; ".join(str(b.get("message")) for b in blockers if b.get("message")) or fallback


def _take(svc: Services, ctx: StepContext, node: str) -> BudgetSlots:
    return svc.drydock.take_budget_slot(
        holder(ctx.marker, node), node, str(steps.design(ctx)["design_ref"]),
        lease_seconds=svc.settings.budget_lease,
        description=f"{ctx.action_name} {ctx.action_id}", ctx=ctx.request_context())


def _blocked(ctx: StepContext, exc: Conflict) -> Outcome:
    """Over budget: wait (a blocker naming the domains and holders), or fail (refuse)."""
    blockers = blockers_of(exc)
    text = describe(blockers, exc.message)
    if ctx.parameters.get("budget") == "refuse":
        return failed(EXHAUSTED, text, {"blockers": blockers})
    seen = sorted(f"{b.get('domain')}="
                  f"{[as_object(h).get('holder') for h in as_list(b.get('holders'))]}"
                  for b in blockers)
    changed = seen != ctx.memo.get("blocked_by")
    return retry_after(WAIT_INTERVAL, memo={"blocked_by": seen},
                       note=f"Waiting for a failure-domain slot: {text}" if changed else "",
                       details={"blocked": {"reason": EXHAUSTED, "message": text,
                                            "blockers": blockers}})


def waiting_in(task: object) -> dict[str, object] | None:
    """The nodes of a Drydock task whose take_budget_slot step waits now (its last message
    is Drydock's BudgetExhausted one), as a blocker naming each full domain and its
    holders; None when no node waits."""
    result = task.get("result") if isinstance(task, dict) else None
    details = result.get("details") if isinstance(result, dict) else None
    messages = details.get("messageList") if isinstance(details, dict) else None
    last: dict[str, JSONObject] = {}
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and m.get("step") == TAKE and m.get("node"):
            last[str(m["node"])] = m
    waiting = {n: m for n, m in sorted(last.items()) if m.get("reason") == EXHAUSTED}
    if not waiting:
        return None
    blockers = [{**b, "node": n} for n, m in waiting.items()
                for b in as_list(m.get("blockers")) if isinstance(b, dict)]
    text = "; ".join(f"{n}: " + describe([b for b in blockers if b["node"] == n],
                                         str(m.get("message"))) for n, m in waiting.items())
    return {"reason": EXHAUSTED, "nodes": list(waiting), "blockers": blockers,
            "message": f"waiting for a failure-domain slot: {text}"}


class BudgetRefused(Conflict):
    reason, title = EXHAUSTED, "A failure domain of a target node has no slot free"


def take_or_refuse(svc: Services, design_ref: str, nodes: list[str], rc: RequestContext,
                   action: str) -> None:
    """At POST with budget=refuse: take every target's slots now (under the holders the
    action's steps use, so they only renew them) or refuse with 409 naming each full domain
    and its holders, giving back what was taken."""
    taken: list[str] = []
    for node in nodes:
        try:
            svc.drydock.take_budget_slot(holder(rc.marker, node), node, design_ref,
                                         lease_seconds=svc.settings.budget_lease,
                                         description=f"{action} (admitted)", ctx=rc)
            taken.append(node)
        except Conflict as exc:
            if exc.instance_reason != EXHAUSTED:
                raise
            for done_node in taken:
                svc.drydock.release_budget_slot(holder(rc.marker, done_node), ctx=rc)
            blockers = blockers_of(exc)
            raise BudgetRefused(
                f"{action} refused (budget=refuse): {describe(blockers, exc.message)}",
                messages=exc.messages, details={"blockers": blockers}, retry=False) from exc


def refuse_if_full(svc: Services, design_ref: str, nodes: list[str], rc: RequestContext,
                   action: str) -> None:
    """At POST of a site action with budget=refuse: 409 naming each failure domain of its
    nodes that other holders have filled now, and those holders (Drydock's dry run: nothing
    is taken, nothing created). Admitted, the groups' nodes take their slots one at a time
    within each budget, as with wait."""
    found: dict[str, dict[str, object]] = {}
    for node in nodes:
        for b in svc.drydock.check_budget_slot(holder(rc.marker, node), node, design_ref,
                                               ctx=rc):
            found.setdefault(str(b.get("domain")), dict(b, node=node))
    if not found:
        return
    blockers = [found[d] for d in sorted(found)]
    text = describe(blockers, "a failure domain of its nodes is full")
    raise BudgetRefused(f"{action} refused (budget=refuse): {text}",
                        messages=[simple_message(f"{b.get('node')}: {b.get('message')}")
                                  for b in blockers],
                        details={"blockers": blockers}, retry=False)


def take(ctx: StepContext) -> Outcome:
    """Take the node's slots (Drydock decides atomically, across every replica)."""
    assert ctx.node is not None
    try:
        body = _take(services(ctx), ctx, ctx.node)
    except Conflict as exc:
        if exc.instance_reason != EXHAUSTED:
            raise
        return _blocked(ctx, exc)
    slots = body.get("slots") or []
    domains = ", ".join(str(s.get("domain")) for s in slots) or "none declared"
    return done({"holder": holder(ctx.marker, ctx.node), "domains": len(slots)},
                details={"slots": slots}, note=f"Failure-domain slots taken: {domains}")


def hold(ctx: StepContext) -> Outcome | None:
    """Before each attempt of a step that keeps the node out of service: renew the slots;
    if they lapsed (this action's worker died and its lease ran out), take them again,
    waiting when another holder has them now. None: go on."""
    if ctx.node is None or not ctx.output(TAKE).get("domains"):
        return None
    svc = services(ctx)
    try:
        svc.drydock.renew_budget_slot(holder(ctx.marker, ctx.node),
                                      lease_seconds=svc.settings.budget_lease,
                                      ctx=ctx.request_context())
        return None
    except NotFound:
        LOG.warning("Action %s: the slots of %s lapsed; taking them again", ctx.action_id,
                    ctx.node)
    try:
        _take(svc, ctx, ctx.node)
    except Conflict as exc:
        if exc.instance_reason != EXHAUSTED:
            raise
        return _blocked(ctx, exc)
    return None


def guarded(fn: StepFn) -> StepFn:
    """`fn`, run only while the node's slots are held."""
    def run(ctx: StepContext) -> Outcome:
        return hold(ctx) or fn(ctx)

    run.__name__ = getattr(fn, "__name__", "step")
    run.__doc__ = fn.__doc__
    return run


def release(ctx: StepContext) -> Outcome:
    """The node is in service again: give its slots back."""
    assert ctx.node is not None
    services(ctx).drydock.release_budget_slot(holder(ctx.marker, ctx.node),
                                              ctx=ctx.request_context())
    return done(note="Failure-domain slots given back: the node is in service")


def finish(ctx: FinishContext) -> None:
    """The action ended: give back every slot its nodes took and did not give back in their
    release step (that step's success already did: asking Drydock again would keep the
    action's end waiting on it; one that cannot be given back frees itself by its lease)."""
    svc = services(ctx)
    for sid, output in sorted(ctx.outputs.items()):
        name = (output or {}).get("holder") if sid.startswith(TAKE + ".") else None
        released = RELEASE + sid[len(TAKE):]
        if not name or ctx.step_states.get(released) == StepState.SUCCESS.value:
            continue
        try:
            marker = str(name).split(":")[1]  # the action's marker (see holder)
            svc.drydock.release_budget_slot(str(name), ctx=RequestContext(marker=marker))
        except BerthError as exc:
            LOG.warning("Could not give back the slots of %s: %s", name, exc)


TERMINAL = {s.value for s in TERMINAL_STEP}


def live_holders(action: ActionRow, steps: list[StepRow]) -> list[str]:
    """Holders of an action's nodes that took slots (a node in no failure domain takes none)
    and have not given them back."""
    by_id = {s.step_id: s for s in steps}
    pending = StepState.PENDING.value
    return [holder(action.marker, n) for n in action.target_nodes or []
            if (took := by_id.get(f"{TAKE}.{n}")) is not None
            and took.state == StepState.SUCCESS.value and (took.output or {}).get("domains")
            and getattr(by_id.get(f"{RELEASE}.{n}"), "state", pending) not in TERMINAL]


class SlotRenewer:
    """Renews, every quarter of the lease, the slots of the actions that live workers hold
    or that wait for their next step; an action whose worker died (its lease ran out) is
    not renewed, so its slots free themselves unless a worker takes the action over first
    (whose next step then renews or takes them again: see `hold`)."""

    def __init__(self, store: ActionStore, svc: Services,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.svc = svc
        self.clock = clock

    def renew_once(self) -> int:
        """Renew every live holder once; how many were renewed."""
        now, renewed = self.clock(), 0
        for action in self.store.active():
            if action.lease_owner is not None and (action.lease_expires or 0.0) < now:
                continue  # its worker died: let the slots lapse
            for name in live_holders(action, self.store.steps(action.id)):
                try:
                    self.svc.drydock.renew_budget_slot(
                        name, lease_seconds=self.svc.settings.budget_lease,
                        ctx=RequestContext(marker=action.marker))
                    renewed += 1
                except BerthError as exc:  # lapsed (hold() takes it again) or Drydock down
                    LOG.info("Slots of %s not renewed: %s", name, exc)
        return renewed

    def run(self, stop: threading.Event) -> None:
        failures = FailureLog(LOG, "Renewing failure-domain slots")
        while not stop.wait(self.svc.settings.budget_lease / 4):  # the next round tries again
            failures.run(self.renew_once)
