"""Budget slots over HTTP's words: checks a request, finds the node's domains in the design,
and takes, renews, gives up or lists slots (409 naming each full domain and its holders)."""

from __future__ import annotations

import re

from common.bodyschema import schema_problems
from common.clients.generated.drydock import BudgetSlot, BudgetSlots
from common.context import RequestContext
from common.errors import NotFound, ValidationFailed
from common.jsontypes import JSONObject, as_float, as_str
from common.status import validation_message
from drydock_api.budgets.slots import ClaimsOf, Holding, SlotStore, exhausted

HOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}$")
DEFAULT_LEASE, MAX_LEASE = 60.0, 3600.0
class SlotsNotHeld(NotFound):
    reason, title = "SlotsNotHeld", "The holder holds no slot"


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValidationFailed("Invalid budget slot request", messages=[
            validation_message(p, name="BudgetSlotRequest") for p in problems])


def check_holder(holder: object, problems: list[str]) -> str:
    if not isinstance(holder, str) or not HOLDER.match(holder):
        problems.append("holder must be 1-255 characters: letters, digits and ._:@- "
                        "(starting with a letter or digit)")
        return ""
    return holder


class BudgetService:
    def __init__(self, slots: SlotStore, claims_of: ClaimsOf) -> None:
        self.slots = slots
        self.claims_of = claims_of

    def take(self, ctx: RequestContext, body: JSONObject) -> BudgetSlots:
        """Hold a slot of every domain of body.node for body.holder (409 when one is full)."""
        _refuse(schema_problems("drydock", "BudgetSlotRequest", body))
        holder, node = str(body["holder"]), str(body["node"])
        description, dry_run = as_str(body.get("description")), body.get("dry_run", False)
        lease = as_float(body.get("lease_seconds", DEFAULT_LEASE), DEFAULT_LEASE)
        claims = self.claims_of(node, body["design_ref"], ctx)
        if dry_run:  # what taking would answer now; nothing is taken
            return {"holder": holder, "node": node, "slots": [],
                    "domains": [c.domain for c in claims],
                    "blockers": [b.as_dict() for b in self.slots.check(holder, claims)]}
        blockers = self.slots.take(holder, node, claims, lease,
                                   (description or "")[:1024] or None)
        if blockers:
            raise exhausted(node, blockers)
        return {"holder": holder, "node": node, "slots": self._view(self.slots.held(holder))}

    def renew(self, holder: str, body: JSONObject) -> BudgetSlots:
        problems = schema_problems("drydock", "BudgetRenewRequest", body)
        check_holder(holder, problems)
        _refuse(problems)
        lease = as_float(body.get("lease_seconds", DEFAULT_LEASE), DEFAULT_LEASE)
        held = self.slots.renew(holder, lease)
        if not held:
            raise SlotsNotHeld(f"{holder} holds no slot (never taken, given up, or its lease "
                               f"ran out)")
        return {"holder": holder, "slots": self._view(held)}

    def release(self, holder: str) -> None:
        problems: list[str] = []
        check_holder(holder, problems)
        _refuse(problems)
        self.slots.release(holder)

    def held(self, holder: str | None = None) -> BudgetSlots:
        return {"slots": self._view(self.slots.held(holder))}

    @staticmethod
    def _view(held: list[Holding]) -> list[BudgetSlot]:
        return [h.as_dict() for h in held]
