"""Creating and reading plans; checking that an action may be created from one."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from common.api import API_PREFIX
from common.context import RequestContext
from common.errors import BadRequest, Conflict, ValidationFailed
from common.status import validation_message
from shipyard_api.actions.service import ActionService, check_conflicts, new_ulid
from shipyard_api.actions.views import iso
from shipyard_api.plans import compose, site
from shipyard_api.plans.model import Composition, Reader
from shipyard_api.plans.store import PlanRow, PlanStore
from shipyard_api.workflow.definitions import Prepared, plan

COMPOSERS: dict[str, Callable[[Reader, Prepared], Composition]] = {
    "redeploy_server": compose.redeploy, "relabel_nodes": compose.relabel,
    "deploy_site": site.site, "update_site": site.site}
DEFAULT_TTL = 900.0


class PlanExpired(Conflict):
    reason, title = "PlanExpired", "The plan has expired"


class PlanBlocked(Conflict):
    reason, title = "PlanBlocked", "The plan has blockers"


def verdict(body: dict[str, object]) -> str:
    return "blocked" if body["blockers"] else "warnings" if body["warnings"] else "clear"


class PlanService:
    def __init__(self, store: PlanStore, actions: ActionService, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time,
                 new_id: Callable[[], str] = new_ulid) -> None:
        self.store, self.actions, self.ttl = store, actions, ttl
        self.clock, self.new_id = clock, new_id

    def _prepare(self, name: str, parameters: Mapping[str, object],
                 out: Composition) -> Prepared:
        definition = self.actions.definition(name)
        try:
            return definition.prepare(parameters, self.actions.documents)
        except Conflict as exc:  # intermediate commits: a blocker of the plan, not an error
            out.block("shipyard", exc.message)
            allowed = definition.prepare({**parameters, "allow-intermediate-commits": True},
                                         self.actions.documents)
            return replace(allowed, parameters={**allowed.parameters,
                                                "allow-intermediate-commits": False})

    def create(self, name: object, parameters: Mapping[str, object] | None,
               ctx: RequestContext) -> dict[str, object]:
        """Compose the plan of an action request (same body as POST /actions) and store it."""
        definition = self.actions.definition(name)
        services = self.actions.services
        if services is None:
            raise RuntimeError("plans read the peers: the action service needs its services")
        parameters = {} if parameters is None else parameters  # an object: see the resource
        early = Composition()
        prepared = self._prepare(definition.name, parameters, early)
        now = self.clock()
        active = tuple(self.actions.store.active())
        out = COMPOSERS[definition.name](Reader(services, ctx, now, active),
                                         prepared)
        out.blockers[:0] = early.blockers
        conflicts = []
        try:
            check_conflicts(prepared, active)
        except Conflict as exc:
            out.block("shipyard", exc.message)
            conflicts = [{"id": a.id, "name": a.name, "state": a.state,
                          "target_nodes": a.target_nodes, "site_wide": a.site_wide}
                         for a in active]
        body = {"design_ref": out.design_ref, "conflicts": conflicts,
                "blockers": out.blockers, "warnings": out.warnings,
                "steps": [s.step_id for s in plan(definition, prepared.targets)],
                "nodes": out.nodes, "groups": out.groups, "calls": out.calls}
        row = PlanRow(id=self.new_id(), action=definition.name,
                      parameters=prepared.parameters, user=ctx.end_user or ctx.user,
                      marker=ctx.marker, created_at=now, expires_at=now + self.ttl,
                      revision_id=prepared.revision_id, body=body, facts=out.facts)
        return self.view(self.store.add(row, now))

    def list(self, limit: int = 100) -> list[dict[str, object]]:
        return [self.view(row) for row in self.store.recent(limit)]

    def get(self, plan_id: str) -> dict[str, object]:
        return self.view(self.store.get(plan_id))

    def view(self, row: PlanRow) -> dict[str, object]:
        body = dict(row.body)
        return {"id": row.id, "action": row.action, "parameters": row.parameters,
                "revision_id": row.revision_id, "created": iso(row.created_at),
                "expires": iso(row.expires_at), "expired": self.clock() >= row.expires_at,
                "user": row.user, "context_marker": row.marker, "verdict": verdict(body),
                **body, "facts": row.facts, "url": f"{API_PREFIX}/plans/{row.id}"}

    def check(self, plan_id: object, name: str, prepared: Prepared) -> None:
        """An action may be created from a plan that is current, of the same action and
        parameters, and without blockers (404, 409 or 400 otherwise)."""
        if not isinstance(plan_id, str) or not plan_id:
            raise BadRequest("plan_id must be the id of a plan")
        row = self.store.get(plan_id)
        problems = []
        if row.action != name:
            problems.append(f"Plan {plan_id} is a plan of {row.action}, not of {name}")
        if row.parameters != prepared.parameters:
            problems.append(f"The parameters differ from plan {plan_id}'s: "
                            f"{row.parameters} (plan) vs {prepared.parameters}")
        if problems:
            raise ValidationFailed("The action does not match its plan", messages=[
                validation_message(p, name="ActionPlan") for p in problems])
        if self.clock() >= row.expires_at:
            raise PlanExpired(f"Plan {plan_id} expired at {iso(row.expires_at)}; plan again")
        found = row.body.get("blockers") if row.body else None
        blockers = found if isinstance(found, list) else []
        if blockers:
            raise PlanBlocked(f"Plan {plan_id} has {len(blockers)} blocker(s): "
                              + "; ".join(str(b["message"]) for b in blockers[:3])
                              + "; resolve them and plan again")
