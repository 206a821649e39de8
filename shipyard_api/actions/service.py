"""Creating, listing, showing and controlling actions (the domain behind /actions)."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from cachetools import LRUCache
from ulid import ULID

from common.audit import acting, request_actor
from common.context import RequestContext
from common.errors import BadRequest, Conflict, NotFound
from shipyard_api.actions.disruption import allowed_by
from shipyard_api.actions.params import canonical
from shipyard_api.actions.ports import DocumentsPort
from shipyard_api.actions.shown import ShownAction
from shipyard_api.actions.site import INTERMEDIATE_CHECKED
from shipyard_api.actions.views import action_view, step_summary, step_view
from shipyard_api.workflow.definitions import ActionDefinition, Prepared, plan
from shipyard_api.workflow.models import ActionRow
from shipyard_api.workflow.services import Services
from shipyard_api.workflow.states import CONTROLS, ActionState
from shipyard_api.workflow.store import ActionStore

ALLOW = "allow-intermediate-commits"
# Encoded actions kept for GET /actions/{id}, at most this many bytes of bodies and kept parts
# (a redeploy's ~0.2 MB, a 300-step deploy_site's ~5 MB); the least recently read go first.
SHOWN_BYTES = 128 * 2**20
Shown = tuple[int, bytes, bytes, ShownAction]


def shown_size(entry: Shown) -> int:
    return len(entry[1]) + len(entry[2]) + entry[3].size


# Airship's actions that Berth refuses, and why: both work on Armada's Helm releases.
NOT_INCLUDED = {
    "test_site": "it runs the Helm tests of the site's releases through Armada, and Berth "
                 "includes no Armada and deploys no Helm releases (check the site with "
                 "GET /api/v1.0/health/extended, Drydock's and Promenade's validatedesign, or "
                 "a plan of deploy_site)",
    "update_software": "it updates the site's software through Armada's Helm releases, and "
                       "Berth includes no Armada (update_site redeploys the nodes the design "
                       "changed)",
}


def new_ulid() -> str:
    return str(ULID())


class PlanCheck(Protocol):
    def check(self, plan_id: object, name: str, prepared: Prepared) -> None: ...


class ActionService:
    def __init__(self, store: ActionStore, definitions: Mapping[str, ActionDefinition],
                 documents: DocumentsPort, *, clock: Callable[[], float] = time.time,
                 new_id: Callable[[], str] = new_ulid,
                 wake: Callable[[], None] | None = None,
                 services: Services | None = None, shown_bytes: int = SHOWN_BYTES) -> None:
        self.store = store
        self.services = services
        self.definitions = definitions
        self.documents = documents
        self.clock = clock
        self.new_id = new_id
        self.wake = wake
        self.plans: PlanCheck | None = None  # set when plans are stored (actions from a plan)
        self._listed: tuple[tuple[int, int], bytes, bytes] | None = None
        self._listed_lock = threading.Lock()
        self._shown: LRUCache[str, Shown] = LRUCache(shown_bytes, getsizeof=shown_size)

    def definition(self, name: object) -> ActionDefinition:
        if isinstance(name, str) and name in NOT_INCLUDED:
            raise BadRequest(f"Action {name} is not included in Berth: {NOT_INCLUDED[name]}",
                             reason="ActionNotIncluded")
        if not isinstance(name, str) or name not in self.definitions:
            raise BadRequest(f"Unknown action {name!r}; known actions: "
                             f"{', '.join(sorted(self.definitions))}", reason="UnknownAction")
        return self.definitions[name]

    def create(self, name: str, parameters: Mapping[str, object] | None, ctx: RequestContext,
               plan_id: object = None, *, allow_intermediate_commits: bool = False,
               ) -> dict[str, object]:
        """Validate, check conflicts, and persist a pending action with its planned steps;
        from a plan (`plan_id`), its steps re-check the facts the plan relied on.
        `allow_intermediate_commits` (Airship's query parameter) sets that parameter of the
        actions that check intermediate commits, and is ignored by the others, as there."""
        definition = self.definition(name)
        if parameters is None:  # an object otherwise: the resource checked the body
            parameters = {}
        if allow_intermediate_commits and name in INTERMEDIATE_CHECKED:
            parameters = {**{k: v for k, v in parameters.items()
                             if not (isinstance(k, str) and canonical(k) == ALLOW)},
                          ALLOW: True}
        prepared = definition.prepare(parameters, self.documents)
        if definition.admit is not None and self.services is not None:
            definition.admit(prepared, self.services, ctx)
        stored = allowed_by(prepared.parameters, ctx.end_user or ctx.user)
        if plan_id is not None:
            if self.plans is None:
                raise BadRequest("Plans are not available here: create the action without "
                                 "plan_id")
            self.plans.check(plan_id, name, prepared)
            stored = {**stored, "plan_id": str(plan_id)}  # check(): a plan's id
        now = self.clock()
        row = ActionRow(
            id=self.new_id(), name=name, parameters=stored,
            state=ActionState.PENDING.value, marker=ctx.marker, user=ctx.end_user or ctx.user,
            created_at=now, updated_at=now, next_run_at=now, revision_id=prepared.revision_id,
            site_wide=prepared.targets is None, target_nodes=prepared.targets or [],
            message="", validations=prepared.validations)
        with acting(request_actor(ctx)):
            self.store.create(row, plan(definition, prepared.targets),
                              lambda active: check_conflicts(prepared, active))
        if self.wake:
            self.wake()
        return self.get(row.id)

    def list(self) -> list[dict[str, object]]:
        """Every action with its steps' summary (Airship's `steps`; its notes at verbosity 1,
        its steps' notes at 0, as Airship lists them)."""
        summaries = self.store.step_summaries()
        out = []
        for r in self.store.all():
            view = action_view(r)
            steps = summaries.get(r.id, [])
            view["steps"] = [step_summary(r.id, sid, state, failures, pos + 1)
                             for sid, state, failures, pos in steps]
            counts: dict[str, int] = {}
            for _, state, _, _ in steps:
                counts[state] = counts.get(state, 0) + 1
            view["step_counts"] = counts
            out.append(view)
        return out

    def list_json(self) -> tuple[bytes, bytes]:
        """`list()` as JSON and gzipped JSON, encoded again only when an action was added or
        changed state (one aggregate query decides; 1,000 actions take ~90 ms to load
        and encode, and 540 KB to send uncompressed)."""
        key = self.store.list_key()
        with self._listed_lock:
            if self._listed is not None and self._listed[0] == key:
                return self._listed[1], self._listed[2]
        data = json.dumps(self.list(), ensure_ascii=False).encode()
        packed = gzip.compress(data, compresslevel=6, mtime=0)
        with self._listed_lock:
            self._listed = (key, data, packed)
        return data, packed

    def get(self, action_id: str, verbosity: int | None = None) -> dict[str, object]:
        if verbosity is None:
            return action_view(*self.store.with_details(action_id))
        return action_view(*self.store.with_details(action_id), verbosity=verbosity)

    def get_json(self, action_id: str) -> tuple[int, bytes, bytes]:
        """The action's version, and `get()` as JSON and gzipped JSON, encoded again only
        when the version moved (`ActionStore.version` decides: one primary-key read), and
        then only in the steps that changed (ShownAction); gzipped at level 1, which a
        running action's watchers ask for at every version (73 KB: 0.4 ms, 9 KB; level 6
        takes 0.9 ms for 7 KB). A body is kept under the version read
        with the action's row, before its steps and audit trail, so it is never older than
        its version; an action not kept yet is read once, without the version's query."""
        with self._listed_lock:
            hit = self._shown.get(action_id)
        if hit is not None:
            version = self.store.version(action_id)
            if version is None:
                raise NotFound(f"No action {action_id}")
            if hit[0] == version:
                return hit[:3]
        shown = hit[3] if hit is not None else ShownAction()
        row, steps, audit = self.store.shown_rows(action_id)
        data = shown.encode(row, steps, audit).encode()
        entry = (row.version, data, gzip.compress(data, compresslevel=1, mtime=0), shown)
        with self._listed_lock:
            if shown_size(entry) <= self._shown.maxsize:  # else answered, not kept
                self._shown[action_id] = entry
        return entry[:3]

    def step(self, action_id: str, sid: str, verbosity: int | None = None) -> dict[str, object]:
        row, step = self.store.get(action_id), self.store.step(action_id, sid)
        if verbosity is None:
            return step_view(action_id, step, action=row)
        return step_view(action_id, step, action=row, verbosity=verbosity)

    def control(self, action_id: str, verb: str, ctx: RequestContext) -> dict[str, object]:
        if verb not in CONTROLS:
            raise NotFound(f"Unknown control {verb!r}; use one of {', '.join(CONTROLS)}")
        with acting(request_actor(ctx)):
            self.store.control(action_id, verb, user=ctx.end_user or ctx.user,
                               marker=ctx.marker, now=self.clock())
        if self.wake:
            self.wake()
        return self.get(action_id)


def check_conflicts(prepared: Prepared, active: Sequence[ActionRow]) -> None:
    """A site-wide action and an action on the same nodes never run at once (409)."""
    mine = set(prepared.targets or [])
    clashes = []
    for row in active:
        if prepared.targets is None or row.site_wide:
            clashes.append(f"{row.name} {row.id} ({row.state})")
        elif mine & set(row.target_nodes or []):
            both = ", ".join(sorted(mine & set(row.target_nodes)))
            clashes.append(f"{row.name} {row.id} ({row.state}) on {both}")
    if clashes:
        raise Conflict("Conflicting actions are still active: " + "; ".join(clashes),
                       reason="ConflictingAction")
