"""Decommission runs in Promenade's database: admission (a new run, a replay joining the
active one, a takeover of a run whose process died, or 409 for another decommission of a busy
node), the phase journal written before and after each attempt's effect (with the engine's
attempt state), and the owner lease (common.runner's LeaseStore on common.lease)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import ColumnElement, Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from common.clients.generated.promenade import DecommissionPhase
from common.clients.generated.promenade import DecommissionRun as RunView
from common.engine import Attempts, begin
from common.errors import Conflict
from common.idempotency_store import default_owner
from common.jsontypes import JSONObject, as_object
from common.lease import Lease
from common.status import Message
from promenade_api.db.models import DecommissionRun, RunState

LEASE = Lease(DecommissionRun.lease_owner, DecommissionRun.lease_expires)
RUNNING: RunState = "running"
SUCCEEDED: RunState = "succeeded"
FAILED: RunState = "failed"
PhaseState = Literal["running", "succeeded", "failed", "failed-not-fatal", "skipped"]
PHASE_RUNNING: PhaseState = "running"
PHASE_SUCCEEDED: PhaseState = "succeeded"
PHASE_FAILED: PhaseState = "failed"
PHASE_SKIPPED: PhaseState = "skipped"
NEW, JOIN, TAKEOVER = "new", "join", "takeover"


class DecommissionBusy(Conflict):
    """Another decommission of the node is running (or a joined one outlived the wait)."""

    reason, title, retry = "DecommissionInProgress", "Decommission in progress", True


class RunLost(Conflict):
    """This process no longer holds the run (its lease lapsed and another took it over)."""

    reason, title, retry = "DecommissionTakenOver", "Decommission taken over", True


@dataclass(frozen=True)
class Admission:
    kind: str  # new | join | takeover
    run: RunView


def view(row: DecommissionRun) -> RunView:
    """The run as GET .../decommission shows it."""
    return {"id": row.id, "node": row.node, "state": row.state, "phase": row.phase,
            "phases": [p.copy() for p in row.phases], "fingerprint": row.fingerprint,
            "params": dict(row.params), "created_by": row.created_by,
            "takeovers": row.takeovers, "created_at": row.created_at,
            "updated_at": row.updated_at, "ended_at": row.ended_at,
            "status_code": row.status_code, "result": row.result,
            "lease_owner": row.lease_owner, "lease_expires": row.lease_expires}


class RunStore:
    """The `decommission_runs` table; `owner` names this process in the lease."""

    def __init__(self, engine: Engine, *, lease: float = 30.0, owner: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.engine, self.lease, self.clock = engine, lease, clock
        self.owner = owner or default_owner()

    def admit(self, node: str, fingerprint: str, params: JSONObject,
              user: str) -> Admission:
        """Start a run of `node`, or join / take over the active run of the same request;
        409 naming the active run when it is another request's."""
        for _ in range(5):
            now = self.clock()
            try:
                with Session(self.engine) as s, s.begin():
                    row = s.scalars(select(DecommissionRun).where(
                        DecommissionRun.active_node == node)).first()
                    if row is not None and row.state != RUNNING and \
                            (row.lease_expires or 0) < now:
                        row.active_node = None  # a stuck attempt's process stopped
                        s.flush()
                        row = None
                    active = None if row is None else view(row)
                    if row is None:
                        run = DecommissionRun(
                            id=str(uuid.uuid4()), node=node, active_node=node,
                            fingerprint=fingerprint, params=params, state=RUNNING, phase=None,
                            phases=[], created_by=user, takeovers=0, created_at=now,
                            updated_at=now, lease_owner=self.owner,
                            lease_expires=now + self.lease)
                        s.add(run)
                        s.flush()
                        created = view(run)
            except IntegrityError:  # another process admitted one just now
                continue
            if active is None:
                return Admission(NEW, created)
            if active["state"] != RUNNING and active["fingerprint"] != fingerprint:
                raise busy(active, f"The decommission of {node} (run {active['id']}) is "
                           f"stuck at phase {active['phase']}: another is accepted once its "
                           "attempt returns or its Promenade process stops")
            if active["fingerprint"] != fingerprint:
                raise busy(active, f"Another decommission of {node} is running "
                           f"(run {active['id']}, phase {active['phase']})")
            if self.take(active["id"]):
                return Admission(TAKEOVER, self.get(active["id"]) or active)
            return Admission(JOIN, active)
        raise DecommissionBusy(f"The decommission of {node} is being admitted; retry")

    def take(self, run_id: str) -> bool:
        """Take over a running run whose owner's lease lapsed."""
        return bool(self._claim([DecommissionRun.id == run_id], self.owner, self.clock(),
                                self.lease, 1))

    # -- common.runner.LeaseStore ---------------------------------------------------------
    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> Sequence[str]:
        """Take over up to `limit` running runs whose holder's lease lapsed (their ids)."""
        return self._claim([], owner, now, lease_seconds, limit)

    def renew_unit(self, unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        with Session(self.engine) as s, s.begin():
            return LEASE.renew(s, [DecommissionRun.id == unit_id], owner, now, lease_seconds)

    def drop_unit(self, unit_id: str, owner: str) -> None:
        with Session(self.engine) as s, s.begin():
            LEASE.drop(s, [DecommissionRun.id == unit_id], owner)

    def _claim(self, where: list[ColumnElement[bool]], owner: str, now: float,
               lease_seconds: float, limit: int) -> list[str]:
        with Session(self.engine) as s, s.begin():
            free = [*where, DecommissionRun.state == RUNNING, LEASE.free(now)]
            ids = s.scalars(select(DecommissionRun.id).where(*free).limit(limit)).all()
            taken = [i for i in ids if LEASE.take(s, [DecommissionRun.id == i, *free], owner,
                                                  now, lease_seconds)]
            if taken:
                s.execute(update(DecommissionRun).where(DecommissionRun.id.in_(taken)).values(
                    takeovers=DecommissionRun.takeovers + 1, updated_at=now))
            return taken

    def get(self, run_id: str) -> RunView | None:
        with Session(self.engine) as s:
            row = s.get(DecommissionRun, run_id)
            return None if row is None else view(row)

    def latest(self, node: str) -> RunView | None:
        """The node's active run, else its newest."""
        with Session(self.engine) as s:
            row = s.scalars(select(DecommissionRun).where(DecommissionRun.node == node)
                            .order_by(DecommissionRun.active_node.is_(None),
                                      DecommissionRun.created_at.desc())).first()
            return None if row is None else view(row)

    # -- the journal (only the lease holder writes) ------------------------------------------
    def phase_started(self, run_id: str, name: str
                      ) -> tuple[DecommissionPhase | None, Attempts]:
        """Record an attempt of `name` starting before its effect (attempts + 1, the
        engine's attempt state begun); the record it had before (None: never started) and
        the attempt state."""
        now = self.clock()
        before: DecommissionPhase | None = None
        seen = Attempts.first(now)

        def change(phases: list[DecommissionPhase]) -> None:
            nonlocal before, seen
            rec = next((p for p in phases if p["name"] == name), None)
            if rec is None:
                rec = _new_phase(name)
                phases.append(rec)
            else:
                before = rec.copy()
                seen = attempts_of(rec, now)
            seen = begin(seen, now)
            rec["state"] = PHASE_RUNNING
            rec["attempts"] = seen.attempts
            rec["attempt_state"] = seen.to_json()
            rec["started_at"] = rec.get("started_at") or now
            rec["attempt_started_at"] = now
            rec["ended_at"] = None
            rec["outcome"] = None
        self._write(run_id, change, phase=name)
        return before, seen

    def phase_ended(self, run_id: str, name: str, state: PhaseState, outcome: str,
                    messages: list[Message], attempts: Attempts | None = None) -> None:
        now = self.clock()

        def change(phases: list[DecommissionPhase]) -> None:
            rec = next((p for p in phases if p["name"] == name), None)
            if rec is None:  # a phase skipped without starting
                rec = _new_phase(name)
                phases.append(rec)
            rec["state"] = state
            rec["ended_at"] = now
            rec["outcome"] = outcome
            rec["messages"] = messages
            if attempts is not None and attempts.attempts:
                rec["attempt_state"] = attempts.to_json()
        self._write(run_id, change)

    def finish(self, run_id: str, state: RunState, status_code: int, result: JSONObject,
               *, release: bool = True) -> None:
        """The run is over: its answer kept, the node free for another decommission (with
        `release` False it stays held, by the lease, until `release` is called: a stuck
        attempt still runs)."""
        now = self.clock()
        values: JSONObject = {"state": state, "status_code": status_code, "result": result,
                              "ended_at": now, "updated_at": now}
        with Session(self.engine) as s, s.begin():
            if release:
                LEASE.drop(s, [DecommissionRun.id == run_id], self.owner, active_node=None,
                           **values)
            else:
                s.execute(update(DecommissionRun).where(
                    DecommissionRun.id == run_id, DecommissionRun.lease_owner == self.owner)
                    .values(**values))

    def release(self, run_id: str) -> None:
        """The node of an ended run free again (its stuck attempt returned)."""
        with Session(self.engine) as s, s.begin():
            LEASE.drop(s, [DecommissionRun.id == run_id], self.owner, active_node=None,
                       updated_at=self.clock())

    def _write(self, run_id: str, change: Callable[[list[DecommissionPhase]], None],
               **values: object) -> None:
        with Session(self.engine) as s, s.begin():
            row = s.get(DecommissionRun, run_id)
            if row is None or row.lease_owner != self.owner or row.state != RUNNING:
                raise RunLost(f"Decommission run {run_id} is no longer held by this process")
            phases = [p.copy() for p in row.phases]
            change(phases)
            done = s.execute(update(DecommissionRun).where(
                DecommissionRun.id == run_id, DecommissionRun.lease_owner == self.owner)
                .values(phases=phases, updated_at=self.clock(), **values))
            if done.rowcount != 1:  # type: ignore[attr-defined]
                raise RunLost(f"Decommission run {run_id} is no longer held by this process")


def attempts_of(rec: DecommissionPhase, now: float) -> Attempts:
    """A phase's attempt state as recorded (a record from before it was kept: its starts)."""
    state = rec.get("attempt_state")
    if state:
        return Attempts.load(as_object(state))
    return Attempts(started=rec.get("started_at") or now, attempts=int(rec["attempts"]),
                    noted_at=now)


def _new_phase(name: str) -> DecommissionPhase:
    """A phase's record before its first start (its state is set at once)."""
    return {"name": name, "attempts": 0, "started_at": None, "state": PHASE_RUNNING}


def busy(run: RunView, message: str) -> DecommissionBusy:
    return DecommissionBusy(message, details={
        "node": run["node"], "run": run["id"], "phase": run["phase"], "state": run["state"]})
