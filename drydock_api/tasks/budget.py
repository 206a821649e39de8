"""Failure-domain slots for Drydock's own tasks: before a task's node work takes a node out of
service (prepare, deploy, destroy, power off) the node's slot of every domain is taken in
the slot store (waiting, or refused at POST with budget=refuse), and given back when that
node's work ends; a task acting under a holder that already has them (a Shipyard redeploy:
`budget_holder`) takes none."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from common.context import RequestContext
from common.errors import Conflict
from common.jsontypes import JSON, JSONObject
from common.status import Message, simple_message
from common.workflow import Done, Failed, Outcome, Retry, StepDef
from drydock_api.budgets.slots import Blocker, ClaimsOf, SlotStore, exhausted
from drydock_api.tasks.context import Budgets, NodeContext, NodeStep

LOG = logging.getLogger(__name__)
KEY = "budget_key"  # options: the task's own holders are drydock:<key>:<node>
BUDGETED = ("prepare_nodes", "deploy_nodes", "destroy_nodes", "power_off_nodes")
STEP = "take_budget_slot"
WAIT_INTERVAL = 2.0  # how often a waiting node asks for its slot again (s)


class HolderNotCovering(Conflict):
    reason, title = "SlotsNotHeld", "The budget holder does not hold the nodes' slots"


def task_holder(key: str, node: str) -> str:
    return f"drydock:{key}:{node}"


class TaskBudgets:
    """The slot store as tasks and reboots use it (leases renewed by the task's worker)."""

    def __init__(self, slots: SlotStore, claims_of: ClaimsOf, lease_seconds: float) -> None:
        self.slots = slots
        self.claims_of = claims_of
        self.lease = lease_seconds

    def admit(self, action: str, body: JSONObject, nodes: list[str],
              ctx: RequestContext) -> JSONObject:
        """At POST: the options the task keeps (choice, holder, key). A `budget_holder` must
        hold a slot of every domain of each node (409 SlotsNotHeld naming those it does
        not); with budget=refuse each node's slots are taken now, under the holders the
        task's steps use, or 409 BudgetExhausted naming each full domain and its holders
        (nothing taken, nothing created). Nothing is kept when no node is in a declared
        failure domain: the task then has no take_budget_slot step."""
        if action not in BUDGETED:
            return {}
        choice, holder = str(body.get("budget") or "wait"), body.get("budget_holder")
        kept: JSONObject = {"budget": choice}
        if holder is not None:
            self._covers(str(holder), nodes, body["design_ref"], ctx)
            return {**kept, "budget_holder": holder}
        if not any(self.claims_of(n, body["design_ref"], ctx) for n in nodes):
            return {}  # no node of the task is in a declared failure domain
        key = uuid.uuid4().hex
        kept[KEY] = key
        if choice == "refuse":
            self.take_all(key, nodes, body["design_ref"], ctx, f"{action} (admitted)")
        return kept

    def _covers(self, holder: str, nodes: list[str], ref: JSON, ctx: RequestContext) -> None:
        held = self.slots.held(holder)
        missing = []
        for node in nodes:
            have = {h.domain for h in held if h.node == node}
            lacking = [c.domain for c in self.claims_of(node, ref, ctx) if c.domain not in have]
            if lacking:
                missing.append(f"{node} ({', '.join(lacking)})")
        if missing:
            raise HolderNotCovering(f"budget_holder {holder} holds no slot of "
                                    + "; ".join(missing), retry=False)

    def take_all(self, key: str, nodes: list[str], ref: JSON, ctx: RequestContext,
                 description: str) -> None:
        """Every node's slots, or none (409 naming the first node's full domains)."""
        taken: list[str] = []
        for node in nodes:
            blockers = self.slots.take(task_holder(key, node), node,
                                       self.claims_of(node, ref, ctx), self.lease, description)
            if blockers:
                for done in taken:
                    self.slots.release(task_holder(key, done))
                raise exhausted(node, blockers)
            taken.append(node)

    def forget(self, options: JSONObject, nodes: list[str]) -> None:
        """Slots taken at POST for a task that was not created (an idempotent replay)."""
        for node in nodes:
            if options.get(KEY):
                self.slots.release(task_holder(str(options[KEY]), node))

    def take(self, ctx: NodeContext) -> Outcome:
        """The node step: hold the node's slots (or act under the task's budget_holder)."""
        node, options = ctx.node.name, ctx.options
        if options.get("budget_holder"):
            return Done(f"acting under {options['budget_holder']}, which holds the node's "
                        f"failure-domain slots", output={"holder": options["budget_holder"]})
        if not options.get(KEY):  # a task admitted before budgets existed
            return Done("no failure-domain slot needed", output={"domains": 0})
        claims = self.claims_of(node, ctx.design_ref, ctx.request)
        holder = task_holder(str(options[KEY]), node)
        blockers = self.slots.take(holder, node, claims, self.lease,
                                   f"{ctx.action} task {ctx.task}")
        if not blockers:
            names = ", ".join(c.domain for c in claims) or "none declared"
            return Done(f"failure-domain slots taken: {names}",
                        output={"holder": holder, "domains": len(claims)})
        text = "; ".join(b.sentence() for b in blockers)
        if options.get("budget") == "refuse":
            return Failed("BudgetExhausted", f"{node} cannot go out of service: {text}",
                          details={"blockers": [b.as_dict() for b in blockers]})
        seen = sorted(f"{b.domain}={[h.holder for h in b.holders]}" for b in blockers)
        if seen != ctx.state.get("blocked_by"):
            ctx.state["blocked_by"] = [*seen]
            ctx.message(_waiting(node, blockers, text))
        return Retry(WAIT_INTERVAL, f"waiting for a failure-domain slot: {text}")

    def retake(self, ctx: NodeContext, blocked: list[str]) -> Outcome | None:
        """After a takeover, before the node's next step: its slots were taken by a worker
        that died and may have lapsed with it; take them again (renewing them when still
        held). None: held, go on; Retry while another holder has a domain now (a message
        naming it when what blocks changes; `blocked` remembers it); Failed with
        budget=refuse. A task acting under a `budget_holder` leaves that to its holder."""
        node, options = ctx.node.name, ctx.options
        if not options.get(KEY) or options.get("budget_holder"):
            return None
        claims = self.claims_of(node, ctx.design_ref, ctx.request)
        blockers = self.slots.take(task_holder(str(options[KEY]), node), node, claims,
                                   self.lease, f"{ctx.action} task {ctx.task}")
        if not blockers:
            if blocked or claims:
                names = ", ".join(c.domain for c in claims)
                ctx.message(simple_message(
                    f"{node}: failure-domain slots taken again after a takeover: {names}",
                    error=False, node=node, step=STEP, context_type="node", context=node))
            return None
        text = "; ".join(b.sentence() for b in blockers)
        if options.get("budget") == "refuse":
            return Failed("BudgetExhausted", f"{node} cannot go on out of service after a "
                          f"takeover (its slots lapsed): {text}",
                          details={"blockers": [b.as_dict() for b in blockers]})
        seen = sorted(f"{b.domain}={[h.holder for h in b.holders]}" for b in blockers)
        if seen != blocked:
            blocked[:] = seen
            ctx.message(_waiting(node, blockers, text))
        return Retry(WAIT_INTERVAL, f"waiting for a failure-domain slot: {text}")

    def release(self, options: JSONObject, node: str) -> None:
        """The node's work in the task ended: give its slots back (not a budget_holder's)."""
        if options.get(KEY) and not options.get("budget_holder"):
            self.slots.release(task_holder(str(options[KEY]), node))

    def renew(self, options: JSONObject) -> int:
        """Extend the live slots of a running task's nodes."""
        if not options.get(KEY) or options.get("budget_holder"):
            return 0
        return self.slots.renew_prefix(f"drydock:{options[KEY]}:", self.lease)


def _waiting(node: str, blockers: list[Blocker], text: str) -> Message:
    return simple_message(f"{node}: waiting for a failure-domain slot: {text}", error=False,
                          node=node, step=STEP, context_type="node", context=node,
                          reason="BudgetExhausted",
                          blockers=[b.as_dict() for b in blockers])


def uses_slots(options: JSONObject) -> bool:
    """Whether a task's nodes start with take_budget_slot."""
    return bool(options.get(KEY) or options.get("budget_holder"))


def take_step(budgets: Callable[[NodeContext], Budgets | None]) -> NodeStep:
    """The first node step of a budgeted action; waits up to `release_timeout`."""
    def run(ctx: NodeContext) -> Outcome:
        found = budgets(ctx)
        return found.take(ctx) if found is not None else Done("no slot store configured")

    return StepDef(STEP, run, lambda ctx: ctx.settings.policy(ctx.settings.release_timeout))
