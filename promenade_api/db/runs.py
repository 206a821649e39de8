"""Decommission runs in Promenade's database: admission (a new run, a replay joining the
active one, a takeover of a run whose process died, or 409 for another decommission of a busy
node), the phase journal written before and after each phase's effect, and the owner lease."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from common.errors import Conflict
from common.idempotency_store import default_owner
from common.lease import Lease
from promenade_api.db.models import DecommissionRun

LEASE = Lease(DecommissionRun.lease_owner, DecommissionRun.lease_expires)
RUNNING, SUCCEEDED, FAILED = "running", "succeeded", "failed"
PHASE_RUNNING, PHASE_SUCCEEDED, PHASE_FAILED, PHASE_SKIPPED = (
    "running", "succeeded", "failed", "skipped")
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
    run: dict[str, Any]


def view(row: DecommissionRun) -> dict[str, Any]:
    """The run as GET .../decommission shows it."""
    return {"id": row.id, "node": row.node, "state": row.state, "phase": row.phase,
            "phases": [dict(p) for p in row.phases], "fingerprint": row.fingerprint,
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

    def admit(self, node: str, fingerprint: str, params: dict[str, Any],
              user: str) -> Admission:
        """Start a run of `node`, or join / take over the active run of the same request;
        409 naming the active run when it is another request's."""
        for _ in range(5):
            now = self.clock()
            try:
                with Session(self.engine) as s, s.begin():
                    row = s.scalars(select(DecommissionRun).where(
                        DecommissionRun.active_node == node)).first()
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
            if active["fingerprint"] != fingerprint:
                raise busy(active, f"Another decommission of {node} is running "
                           f"(run {active['id']}, phase {active['phase']})")
            if self.take(active["id"]):
                return Admission(TAKEOVER, self.get(active["id"]) or active)
            return Admission(JOIN, active)
        raise DecommissionBusy(f"The decommission of {node} is being admitted; retry")

    def take(self, run_id: str) -> bool:
        """Take over a running run whose owner's lease lapsed."""
        now = self.clock()
        with Session(self.engine) as s, s.begin():
            where = [DecommissionRun.id == run_id, DecommissionRun.state == RUNNING,
                     LEASE.free(now)]
            if not LEASE.take(s, where, self.owner, now, self.lease):
                return False
            s.execute(update(DecommissionRun).where(DecommissionRun.id == run_id).values(
                takeovers=DecommissionRun.takeovers + 1, updated_at=now))
            return True

    def renew(self, run_id: str) -> bool:
        with Session(self.engine) as s, s.begin():
            return LEASE.renew(s, [DecommissionRun.id == run_id], self.owner, self.clock(),
                               self.lease)

    def get(self, run_id: str) -> dict[str, Any] | None:
        with Session(self.engine) as s:
            row = s.get(DecommissionRun, run_id)
            return None if row is None else view(row)

    def latest(self, node: str) -> dict[str, Any] | None:
        """The node's active run, else its newest."""
        with Session(self.engine) as s:
            row = s.scalars(select(DecommissionRun).where(DecommissionRun.node == node)
                            .order_by(DecommissionRun.active_node.is_(None),
                                      DecommissionRun.created_at.desc())).first()
            return None if row is None else view(row)

    # -- the journal (only the lease holder writes) ------------------------------------------
    def phase_started(self, run_id: str, name: str) -> dict[str, Any] | None:
        """Record `name`'s start (attempts + 1) before its effect; the record it had before
        (None: never started)."""
        now = self.clock()
        before: dict[str, Any] | None = None

        def change(phases: list[dict[str, Any]]) -> None:
            nonlocal before
            rec = next((p for p in phases if p["name"] == name), None)
            if rec is None:
                rec = {"name": name, "attempts": 0, "started_at": None}
                phases.append(rec)
            else:
                before = dict(rec)
            rec.update(state=PHASE_RUNNING, attempts=int(rec["attempts"]) + 1,
                       started_at=rec["started_at"] or now, attempt_started_at=now,
                       ended_at=None, outcome=None)
        self._write(run_id, change, phase=name)
        return before

    def phase_ended(self, run_id: str, name: str, state: str, outcome: str,
                    messages: list[Any]) -> None:
        now = self.clock()

        def change(phases: list[dict[str, Any]]) -> None:
            rec = next((p for p in phases if p["name"] == name), None)
            if rec is None:  # a phase skipped without starting
                rec = {"name": name, "attempts": 0, "started_at": None}
                phases.append(rec)
            rec.update(state=state, ended_at=now, outcome=outcome, messages=messages)
        self._write(run_id, change)

    def finish(self, run_id: str, state: str, status_code: int, result: dict[str, Any]) -> None:
        """The run is over: its answer kept, the node free for another decommission."""
        with Session(self.engine) as s, s.begin():
            LEASE.drop(s, [DecommissionRun.id == run_id], self.owner, state=state,
                       status_code=status_code, result=result, active_node=None,
                       ended_at=self.clock(), updated_at=self.clock())

    def _write(self, run_id: str, change: Callable[[list[dict[str, Any]]], None],
               **values: Any) -> None:
        with Session(self.engine) as s, s.begin():
            row = s.get(DecommissionRun, run_id)
            if row is None or row.lease_owner != self.owner or row.state != RUNNING:
                raise RunLost(f"Decommission run {run_id} is no longer held by this process")
            phases = [dict(p) for p in row.phases]
            change(phases)
            done = s.execute(update(DecommissionRun).where(
                DecommissionRun.id == run_id, DecommissionRun.lease_owner == self.owner)
                .values(phases=phases, updated_at=self.clock(), **values))
            if done.rowcount != 1:  # type: ignore[attr-defined]
                raise RunLost(f"Decommission run {run_id} is no longer held by this process")


def busy(run: dict[str, Any], message: str) -> DecommissionBusy:
    return DecommissionBusy(message, details={
        "node": run["node"], "run": run["id"], "phase": run["phase"], "state": run["state"]})
