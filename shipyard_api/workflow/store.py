"""Persistence of actions and steps: creation, leases (conditional UPDATEs), transitions."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypedDict, Unpack

from sqlalchemy import Engine, Table, Text, bindparam, cast, func, select, text, update
from sqlalchemy.orm import Session, defer, sessionmaker

from common.errors import Conflict, NotFound
from common.jsontypes import JSONObject, as_list
from common.lease import Lease
from common.pgwake import notify_in
from common.prepared import PreparedRead
from shipyard_api.workflow import audit
from shipyard_api.workflow.definitions import PlannedStep
from shipyard_api.workflow.models import ActionRow, AuditRow, StepNote, StepRow
from shipyard_api.workflow.states import (
    CLAIMABLE,
    CONTROLS,
    TERMINAL_ACTION,
    ActionState,
    StepState,
    check_action,
    check_control,
    check_step,
    sources_of,
)

ConflictCheck = Callable[[Sequence[ActionRow]], None]
# PostgreSQL: an action or its steps changed (payload: the action), for the long-polls of
# GET /actions/{id} in other processes.
CHANGES_CHANNEL = "berth_shipyard_changes"


# A step's shown columns, its JSON ones as the text stored: GET /actions/{id} keeps each step's
# encoded part of the view under them and parses and encodes again only a step that changed.
STEP_SHOWN = (StepRow.step_id, StepRow.name, StepRow.node, StepRow.position, StepRow.state,
              StepRow.attempts, StepRow.failures, StepRow.started_at, StepRow.ended_at,
              StepRow.next_attempt_at, StepRow.reason)
STEP_SHOWN_JSON = ("depends_on", "output", "details", "notes")
SHOWN_STEPS = (select(*STEP_SHOWN, *(cast(getattr(StepRow, n), Text) for n in STEP_SHOWN_JSON))
               .where(StepRow.action_id == bindparam("action_id")).order_by(StepRow.position))

STEPS_OF = (select(StepRow).where(StepRow.action_id == bindparam("action_id"))
            .order_by(StepRow.position))
STEPS_OF_UNDETAILED = STEPS_OF.options(defer(StepRow.details, raiseload=True))
ONE_STEP = select(StepRow).where(StepRow.action_id == bindparam("action_id"),
                                 StepRow.step_id == bindparam("sid"))
# The memos of the running or waiting steps of the other unfinished actions (their keys).
HELD_MEMOS = (select(StepRow.memo).join(ActionRow, ActionRow.id == StepRow.action_id)
              .where(StepRow.state.in_([StepState.RUNNING.value, StepState.WAITING.value]),
                     StepRow.action_id != bindparam("action_id"),
                     ActionRow.state.not_in([a.value for a in TERMINAL_ACTION])))

ACTIONS: Table = ActionRow.__table__  # type: ignore[assignment]
STEPS: Table = StepRow.__table__  # type: ignore[assignment]
# The statements of every step's start and end (save_step), built once as Core statements:
# built and run through the ORM, they were most of the engine's own time between steps.
HOLDER = select(ACTIONS.c.lease_owner).where(ACTIONS.c.id == bindparam("action_id"))
STEP_STATE = select(STEPS.c.id, STEPS.c.state, STEPS.c.node).where(
    STEPS.c.action_id == bindparam("action_id"), STEPS.c.step_id == bindparam("sid"))
SET_STEP = update(STEPS).where(STEPS.c.id == bindparam("row_id"))  # SET: the columns given
BUMP = update(ACTIONS).where(ACTIONS.c.id == bindparam("action_id")).values(
    version=ACTIONS.c.version + 1)
BUMP_LISTED = BUMP.values(changes=ACTIONS.c.changes + 1)

# Asked on every list request (see PreparedRead).
LEASE = Lease(ActionRow.lease_owner, ActionRow.lease_expires)


class StepValues(TypedDict, total=False):
    """The columns of a step that `save_step` writes beside its state."""

    attempts: int
    failures: int
    started_at: float | None
    ended_at: float | None
    next_attempt_at: float | None
    memo: JSONObject
    output: JSONObject
    details: JSONObject
    notes: list[StepNote]
    reason: str | None
LIST_KEY = select(func.count(), func.coalesce(func.sum(ActionRow.changes), 0))
# Asked on every GET /actions/{id}: the action's version (None when there is no such action).
VERSION = select(ActionRow.version).where(ActionRow.id == bindparam("action_id"))


class LeaseLost(Exception):
    """Another worker took the action over (our lease expired); stop working on it."""


class ActionStore:
    """All reads and writes of the workflow tables go through here."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._list_key = PreparedRead(sessions.kw["bind"], LIST_KEY)
        self._version = PreparedRead(sessions.kw["bind"], VERSION)
        self._create_lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        """The database engine (the audit log's routes read the same database)."""
        bind: Engine = self._sessions.kw["bind"]
        return bind

    # -- creation and reads -------------------------------------------------------------
    def create(self, row: ActionRow, steps: Sequence[PlannedStep],
               check_conflicts: ConflictCheck) -> ActionRow:
        """Insert an action and its planned steps unless `check_conflicts` raises."""
        with self._create_lock, self._sessions.begin() as s:
            if s.get_bind().dialect.name == "postgresql":
                s.execute(text("LOCK TABLE actions IN SHARE ROW EXCLUSIVE MODE"))
            active = s.scalars(select(ActionRow).where(
                ActionRow.state.not_in([a.value for a in TERMINAL_ACTION]))).all()
            check_conflicts(active)
            s.add(row)
            s.flush()
            for pos, st in enumerate(steps):
                s.add(StepRow(action_id=row.id, step_id=st.step_id, name=st.name, node=st.node,
                              position=pos, depends_on=list(st.depends_on),
                              state=StepState.PENDING.value, attempts=0, failures=0, memo={},
                              output={}, details={}, notes=[]))
            s.add(AuditRow(action_id=row.id, command="create", user=row.user, marker=row.marker,
                           at=row.created_at, outcome="accepted"))
            audit.action_changed(s, row.id, None, row.state, row.created_at, name=row.name,
                                 targets=row.target_nodes or None, site_wide=row.site_wide,
                                 revision=row.revision_id, steps=len(steps))
        return row

    def active(self) -> list[ActionRow]:
        """Actions not yet ended (what a new one could conflict with)."""
        with self._sessions() as s:
            return list(s.scalars(select(ActionRow).where(
                ActionRow.state.not_in([a.value for a in TERMINAL_ACTION]))).all())

    def get(self, action_id: str) -> ActionRow:
        with self._sessions() as s:
            row = s.get(ActionRow, action_id)
            if row is None:
                raise NotFound(f"No action {action_id}")
            return row

    def with_details(self, action_id: str) -> tuple[ActionRow, list[StepRow], list[AuditRow]]:
        """The action, its steps and its audit trail, read in one session."""
        with self._sessions() as s:
            row = s.get(ActionRow, action_id)
            if row is None:
                raise NotFound(f"No action {action_id}")
            steps = list(s.scalars(select(StepRow).where(StepRow.action_id == action_id)
                                   .options(defer(StepRow.memo))  # not shown; can be large
                                   .order_by(StepRow.position)).all())
            audit = list(s.scalars(select(AuditRow).where(AuditRow.action_id == action_id)
                                   .order_by(AuditRow.id)).all())
            return row, steps, audit

    def shown_rows(self, action_id: str) -> tuple[ActionRow, list[tuple[object, ...]],
                                                  list[AuditRow]]:
        """As `with_details`, each step as its STEP_SHOWN columns followed by its
        STEP_SHOWN_JSON ones as stored text, unparsed."""
        with self._sessions() as s:
            row = s.get(ActionRow, action_id)
            if row is None:
                raise NotFound(f"No action {action_id}")
            steps = [tuple(r) for r in s.execute(SHOWN_STEPS, {"action_id": action_id})]
            audit = list(s.scalars(select(AuditRow).where(AuditRow.action_id == action_id)
                                   .order_by(AuditRow.id)).all())
            return row, steps, audit

    def all(self) -> list[ActionRow]:
        with self._sessions() as s:
            return list(s.scalars(select(ActionRow).order_by(ActionRow.created_at,
                                                             ActionRow.id)).all())

    def created_between(self, low: float, high: float | None = None,
                        name: str | None = None) -> list[ActionRow]:
        """Actions created from `low` to `high` (seconds since the epoch), oldest first."""
        query = select(ActionRow).where(ActionRow.created_at >= low)
        if high is not None:
            query = query.where(ActionRow.created_at <= high)
        if name is not None:
            query = query.where(ActionRow.name == name)
        with self._sessions() as s:
            return list(s.scalars(query.order_by(ActionRow.created_at, ActionRow.id)).all())

    def alive_at(self, at: float, slack: float = 1.0) -> list[str]:
        """Ids of the actions that existed and had not ended at `at` (± `slack` s)."""
        with self._sessions() as s:
            return list(s.scalars(select(ActionRow.id).where(
                ActionRow.created_at <= at + slack,
                (ActionRow.ended_at.is_(None)) | (ActionRow.ended_at >= at - slack))).all())

    def step_summaries(self) -> dict[str, list[tuple[str, str, int, int]]]:
        """Every action's steps as (step_id, state, failures, position), in order."""
        query = select(StepRow.action_id, StepRow.step_id, StepRow.state, StepRow.failures,
                       StepRow.position).order_by(StepRow.action_id, StepRow.position)
        out: dict[str, list[tuple[str, str, int, int]]] = {}
        with self._sessions() as s:
            for action_id, sid, state, failures, pos in s.execute(query):
                out.setdefault(action_id, []).append((sid, state, failures or 0, pos))
        return out

    def list_key(self) -> tuple[int, int]:
        """(actions, sum of their `changes`): it changes whenever the list view does, since
        actions are never deleted and every write of a listed field goes through create,
        transition, control or a step's change of state, and all but the first bump
        `changes`."""
        row = self._list_key.one()
        assert row is not None  # an aggregate without GROUP BY has one row
        return int(row[0]), int(row[1])

    def version(self, action_id: str) -> int | None:
        """The action's version: it changes with every write of its view (the action, its
        steps, its audit trail); None when there is no such action."""
        row = self._version.one(action_id=action_id)
        return None if row is None else int(row[0])

    def steps(self, action_id: str, *, details: bool = True) -> list[StepRow]:
        """The action's steps in order; without `details` (a running step's progress, a
        Drydock task tree: tens of KB each) for the engine's turns, which never read them
        (reading such a row's `details` raises)."""
        with self._sessions() as s:
            return list(s.scalars(STEPS_OF if details else STEPS_OF_UNDETAILED,
                                  {"action_id": action_id}).all())

    def step(self, action_id: str, sid: str) -> StepRow:
        with self._sessions() as s:
            row = s.scalars(ONE_STEP, {"action_id": action_id, "sid": sid}).one_or_none()
            if row is None:
                raise NotFound(f"Action {action_id} has no step {sid}", reason="StepNotFound")
            return row

    def audit(self, action_id: str) -> list[AuditRow]:
        with self._sessions() as s:
            return list(s.scalars(select(AuditRow).where(AuditRow.action_id == action_id)
                                  .order_by(AuditRow.id)).all())

    def state_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(actions by state, steps by state), one GROUP BY each (read by /metrics)."""
        with self._sessions() as s:
            actions = s.execute(select(ActionRow.state, func.count())
                                .group_by(ActionRow.state)).all()
            steps = s.execute(select(StepRow.state, func.count())
                              .group_by(StepRow.state)).all()
        return {str(k): int(v) for k, v in actions}, {str(k): int(v) for k, v in steps}

    # -- leases -------------------------------------------------------------------------
    def claim(self, owner: str, now: float, ttl: float) -> str | None:
        """Take the lease of one due action whose lease is free or expired."""
        return next(iter(self.claim_units(owner, now, ttl, 1)), None)

    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> list[str]:
        """Take the leases of up to `limit` due actions whose lease is free or expired, the
        longest due first (common.runner's lease store)."""
        free = LEASE.free(now)
        claimable = ActionRow.state.in_([a.value for a in CLAIMABLE])
        taken: list[str] = []
        with self._sessions.begin() as s:
            ids = s.scalars(select(ActionRow.id).where(claimable, free,
                                                       ActionRow.next_run_at <= now)
                            .order_by(ActionRow.next_run_at).limit(limit + 19)).all()
            for action_id in ids:
                if LEASE.take(s, [ActionRow.id == action_id, claimable, free], owner, now,
                              lease_seconds):
                    taken.append(action_id)
                    if len(taken) >= limit:
                        break
        return taken

    def renew(self, action_id: str, owner: str, now: float, ttl: float) -> bool:
        with self._sessions.begin() as s:
            return LEASE.renew(s, [ActionRow.id == action_id], owner, now, ttl)

    renew_unit = renew

    def release(self, action_id: str, owner: str, next_run_at: float) -> None:
        with self._sessions.begin() as s:
            LEASE.drop(s, [ActionRow.id == action_id], owner, next_run_at=next_run_at)

    def drop_unit(self, unit_id: str, owner: str) -> None:
        """Give the lease up, the action due when it was (its run handed it back already, or
        a claim took it back while its run was ending)."""
        with self._sessions.begin() as s:
            LEASE.drop(s, [ActionRow.id == unit_id], owner)

    # -- transitions --------------------------------------------------------------------
    def transition(self, action_id: str, target: ActionState, now: float,
                   **values: object) -> bool:
        """Move the action to `target` if its current state allows it (conditional UPDATE)."""
        sources = [a.value for a in sources_of(target)]
        extra: dict[str, object] = dict(values)
        if target in TERMINAL_ACTION:
            extra.setdefault("ended_at", now)
        with self._sessions.begin() as s:
            # The state it leaves, locked (PostgreSQL) and pinned by the UPDATE, for the audit.
            current = s.scalar(select(ActionRow.state).where(ActionRow.id == action_id)
                               .with_for_update())
            if current not in sources:
                return False
            res = s.execute(update(ActionRow).where(ActionRow.id == action_id,
                                                    ActionRow.state == current)
                            .values(state=target.value, updated_at=now,
                                    changes=ActionRow.changes + 1,
                                    version=ActionRow.version + 1, **extra))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                return False
            audit.action_changed(s, action_id, current, target.value, now,
                                 reason=extra.get("reason"))
            notify_in(s, CHANGES_CHANNEL, action_id)
            return True

    def control(self, action_id: str, verb: str, *, user: str | None, marker: str | None,
                now: float) -> ActionRow:
        """Apply pause / unpause / stop, audited; 409 when the action's state forbids it."""
        target = CONTROLS[verb]
        with self._sessions.begin() as s:
            row = s.get(ActionRow, action_id)
            if row is None:
                raise NotFound(f"No action {action_id}")
            try:
                check_control(verb, ActionState(row.state))
                check_action(ActionState(row.state), target)
            except Conflict:
                s.add(AuditRow(action_id=action_id, command=verb, user=user, marker=marker,
                               at=now, outcome=f"refused in state {row.state}"))
                _bump(s, action_id)
                s.commit()
                raise
            old_state = row.state
            res = s.execute(update(ActionRow).where(ActionRow.id == action_id,
                                                    ActionRow.state == old_state)
                            .values(state=target.value, updated_at=now, next_run_at=now,
                                    changes=ActionRow.changes + 1,
                                    version=ActionRow.version + 1))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(f"Action {action_id} changed state; try again")
            s.add(AuditRow(action_id=action_id, command=verb, user=user, marker=marker, at=now,
                           outcome="accepted"))
            audit.action_changed(s, action_id, old_state, target.value, now, control=verb)
            notify_in(s, CHANGES_CHANNEL, action_id)
        return self.get(action_id)

    def held_keys(self, except_action: str) -> set[str]:
        """Exclusive keys held by running or waiting steps of other unfinished actions."""
        with self._sessions() as s:
            memos = s.scalars(HELD_MEMOS, {"action_id": except_action}).all()
        return {str(k) for memo in memos for k in as_list((memo or {}).get("exclusive"))}

    def save_step(self, action_id: str, owner: str, sid: str, target: StepState,
                  **values: Unpack[StepValues]) -> None:
        """Persist one step's new state, only while `owner` still holds the action's lease."""
        with self._sessions.begin() as s:
            if s.scalar(HOLDER, {"action_id": action_id}) != owner:
                raise LeaseLost(action_id)
            row_id, old, node = s.execute(STEP_STATE, {"action_id": action_id,
                                                       "sid": sid}).one()
            check_step(StepState(old), target)
            s.execute(SET_STEP, {"row_id": row_id, "state": target.value, **values})
            _bump(s, action_id, listed=old != target.value)
            if old != target.value:
                audit.step_changed(s, action_id, sid, old, target.value,
                                   values.get("ended_at") or time.time(),
                                   reason=values.get("reason"), node=node)
            notify_in(s, CHANGES_CHANNEL, action_id)

    def report_progress(self, action_id: str, owner: str, sid: str,
                        details: Mapping[str, object]) -> bool:
        """Replace a running step's details (its live progress) while `owner` holds the
        action; False when the step no longer runs or the lease is gone."""
        with self._sessions.begin() as s:
            res = s.execute(update(StepRow).where(
                StepRow.action_id == action_id, StepRow.step_id == sid,
                StepRow.state == StepState.RUNNING.value,
                StepRow.action_id.in_(select(ActionRow.id).where(
                    ActionRow.id == action_id, ActionRow.lease_owner == owner)))
                .values(details=details))
            if res.rowcount != 1:  # type: ignore[attr-defined]
                return False
            _bump(s, action_id)
            notify_in(s, CHANGES_CHANNEL, action_id)
            return True

    def skip_steps(self, action_id: str, owner: str, sids: Iterable[str], note: str,
                   now: float) -> None:
        for sid in sids:
            self.save_step(action_id, owner, sid, StepState.SKIPPED, ended_at=now,
                           reason=note)


def _bump(s: Session, action_id: str, *, listed: bool = False) -> None:
    """The action's view changed (a step or an audit entry): a new version; `listed`: a
    step's state changed, which the action list shows too (its steps' summary)."""
    s.execute(BUMP_LISTED if listed else BUMP, {"action_id": action_id})
