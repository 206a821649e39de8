"""A decommission as a durable run: the synchronous HTTP call keeps the spec's contract, but
the phases' progress lives in Promenade's database, so a restarted Promenade resumes the same
run and a replayed request joins it instead of starting another.

The request that admits a run executes it, holding the run's lease (renewed by a heartbeat
thread). Each phase's start is written before its effect and its outcome after; a phase with
an outcome is never run again, and a phase that started without one (its process died) is run
again from what is true at the cluster (every phase is idempotent against it: see
docs/guide/decommission-durable.md). A replay of the same request waits for the run's answer;
once the run's lease lapses (its process died) the replay takes the run over.

A run whose process stopped is also resumed with no request at hand: every Promenade process
looks for running runs whose lease lapsed (`[decommission] resume_interval`) and takes each over
as a replay would, with the parameters, design reference and caller kept with the run. A replay
that arrives meanwhile joins it.

A phase attempt found stuck (phase_engine) fails the run with StepStuck at once, but the node
stays held, the lease renewed, until the attempt returns (its result discarded): no other
decommission of the node runs beside it. A replay of the same request answers that StepStuck
again, also later: the phase is not run again automatically; a new request (another
Idempotency-Key) is a new run from the cluster's state."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from common.clients.generated.promenade import DecommissionPhase
from common.clients.generated.promenade import DecommissionRun as RunView
from common.context import RequestContext, current_marker
from common.disruption import Leave
from common.engine import STUCK, Attempts
from common.errors import BerthError, Conflict, InternalError
from common.failurelog import FailureLog
from common.jsontypes import JSON, JSONObject, as_float, as_object
from common.poll import NotYet, poll
from common.runner import Hold, LeaseStore, heartbeat, renew_hold
from common.status import Message, simple_message, status_body
from promenade_api.db import make_engine
from promenade_api.db.models import Base
from promenade_api.db.runs import (
    FAILED,
    JOIN,
    PHASE_SUCCEEDED,
    RUNNING,
    SUCCEEDED,
    TAKEOVER,
    PhaseState,
    RunLost,
    RunStore,
    busy,
)
from promenade_api.decommission import DecommissionParams, decommission, phase_timeouts
from promenade_api.etcd.model import ClusterSpec
from promenade_api.phase_engine import PhaseStuck
from promenade_api.service import Promenade

LOG = logging.getLogger(__name__)
Inputs = tuple[list[ClusterSpec], Collection[str]]  # the design's etcd clusters and nodes


@dataclass(frozen=True)
class RunRequest:
    """One POST .../decommission: its node and parameters, what makes it the same request
    as another (`fingerprint`), and how long a replay waits for the active run (`wait`)."""

    node: str
    params: DecommissionParams
    wire: JSONObject  # the query parameters and the design reference, as sent
    fingerprint: str
    user: str
    wait: float


def fingerprint_of(node: str, query: Mapping[str, object], design_ref: JSON,
                   idempotency_key: str | None) -> str:
    """Two requests are the same decommission when node, parameters, design reference and
    the caller's Idempotency-Key (or its absence) are the same."""
    doc = json.dumps([node, sorted((k, str(v)) for k, v in query.items()), design_ref,
                      idempotency_key], sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()


def params_json(p: DecommissionParams) -> JSONObject:
    """The parameters as kept with the run, so that a process resuming it runs it as asked."""
    leave: JSON = None if p.leave is None else {"budgets": list(p.leave.budgets),
                                                "after": p.leave.after}
    return {"drain_timeout": p.drain_timeout, "drain_grace_period": p.drain_grace_period,
            "clear_labels_timeout": p.clear_labels_timeout,
            "remove_etcd_timeout": p.remove_etcd_timeout,
            "etcd_ready_timeout": p.etcd_ready_timeout, "fenced": p.fenced, "leave": leave,
            "operator": p.operator}


def params_from(kept: JSONObject) -> DecommissionParams:
    """The parameters kept by `params_json`."""
    def whole(name: str) -> int | None:
        value = kept.get(name)
        return None if value is None else int(str(value))

    leave = kept.get("leave")
    budgets = leave.get("budgets") if isinstance(leave, dict) else None
    return DecommissionParams(
        whole("drain_timeout"), whole("drain_grace_period"), whole("clear_labels_timeout"),
        whole("remove_etcd_timeout"), whole("etcd_ready_timeout"),
        fenced=kept.get("fenced") is True,
        leave=None if not isinstance(leave, dict) else Leave(
            tuple(b for b in budgets if isinstance(b, str)) if isinstance(budgets, list) else (),
            int(str(leave.get("after") or 0))),
        operator=str(kept.get("operator") or ""))


class RunNotResumable(Conflict):
    reason = "RunNotResumable"


def request_timeout(svc: Promenade, p: DecommissionParams) -> float:
    """The longest the request runs: the sum of its phases' timeouts."""
    timeouts = phase_timeouts(svc.settings, p)
    return float(sum(v for k, v in timeouts.items() if k != "fence"))


def scratch_store() -> RunStore:
    """A store of its own in a temporary SQLite file (tests and apps built without a
    database): concurrent requests get a connection each, as on the service's database (one
    in-memory connection shared by two requests' transactions breaks both)."""
    engine = make_engine(f"sqlite:///{Path(tempfile.mkdtemp(prefix='promenade-runs-'))}/runs.db")
    Base.metadata.create_all(engine)
    return RunStore(engine)


@dataclass
class RunJournal:
    """The phase engine's journal, writing the run's phases (with their attempt state)."""

    store: RunStore
    run_id: str
    recorded_phases: dict[str, DecommissionPhase] = field(default_factory=dict)

    def now(self) -> float:
        return self.store.clock()

    def recorded(self, name: str) -> list[Message] | None:
        """The messages of a phase that already has its outcome (not run again)."""
        rec = self.recorded_phases.get(name)
        if rec is None or rec.get("state") != PHASE_SUCCEEDED:
            return None
        return [*(rec.get("messages") or []), simple_message(
            f"{name}: recorded before a takeover, not run again", error=False, step=name)]

    def started(self, name: str) -> tuple[Attempts, list[Message]]:
        before, seen = self.store.phase_started(self.run_id, name)
        if before is None or before.get("ended_at") is not None:
            return seen, []
        LOG.warning("decommission run %s: %s started without an outcome (attempt %s); running "
                    "it again from the cluster's state", self.run_id, name, before["attempts"])
        return seen, [simple_message(f"{name}: started by an earlier attempt without an "
                                     "outcome; re-checked against the cluster and run again",
                                     error=False, step=name)]

    def ended(self, name: str, state: PhaseState, outcome: str, messages: list[Message],
              attempts: Attempts) -> None:
        self.store.phase_ended(self.run_id, name, state, outcome, list(messages), attempts)


class Heartbeat:
    """Renews the run's lease while the request runs the phases (common.runner's heartbeat
    on the store's LeaseStore side: every third of the lease from the previous renewal's
    start); a renewal refused (another process took the run) marks `hold` lost and ends the
    beat. `keep_until` keeps it beating after the request ends (a stuck attempt runs on)."""

    def __init__(self, store: LeaseStore[str], run_id: str, owner: str, lease: float,
                 clock: Callable[[], float]) -> None:
        self._store, self.hold = store, Hold(run_id)
        self._owner, self._lease, self._clock = owner, lease, clock
        self._stop = threading.Event()
        self._kept = False
        self._failures = FailureLog(LOG, f"Renewing the lease of decommission run {run_id}")
        self._thread = threading.Thread(
            target=heartbeat, args=(self._renew, lease, self._stop), daemon=True,
            name=f"decommission-{run_id[:8]}")

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._kept:
            self._stop.set()

    def alive(self) -> bool:
        return not self.hold.lost.is_set()

    def keep_until(self, returned: threading.Event, then: Callable[[], None]) -> None:
        """Go on renewing until `returned` is set, then stop and call `then`."""
        self._kept = True

        def wait() -> None:
            returned.wait()
            self._stop.set()
            try:
                then()
            except Exception:
                LOG.exception("decommission run %s: releasing it failed", self.hold.unit_id)

        threading.Thread(target=wait, daemon=True,
                         name=f"decommission-{self.hold.unit_id[:8]}-stuck").start()

    def _renew(self) -> None:
        if not renew_hold(self._store, self.hold, self._owner, self._clock(), self._lease,
                          "decommission run", self._failures):
            self._stop.set()


class DurableDecommission:
    """Admits, joins, takes over and executes decommission runs."""

    def __init__(self, svc: Promenade, store: RunStore, poll: float = 0.25,
                 max_takeovers: int = 3) -> None:
        self.svc, self.store, self.poll = svc, store, poll
        self.max_takeovers = max_takeovers  # resumed with nobody asking at most this often

    def answer(self, req: RunRequest, inputs: Inputs) -> tuple[int, JSONObject]:
        """The run's answer (status code, status body): executed here, or the one of the
        active run of the same request, waited for at most `req.wait` seconds (409 with the
        run's phase after that). An executed run's failure is raised as its error."""
        deadline = time.monotonic() + req.wait
        last = self.store.latest(req.node)
        if last is not None and last["fingerprint"] == req.fingerprint and (
                (last["state"] == SUCCEEDED and req.wire.get("keyed")) or stuck_run(last)):
            # the keyed request's run already ended, or the request's run is stuck (its
            # phase is not run again automatically: a new request is the operator's call)
            return int(last["status_code"] or 500), dict(last["result"] or {})
        wire = {**req.wire, "started": self.svc.wall(), "request": params_json(req.params),
                "marker": current_marker.get()}
        admission = self.store.admit(req.node, req.fingerprint, wire, req.user)
        run, kind = admission.run, admission.kind
        while kind == JOIN:
            run, kind = self._wait(run, deadline)
            if kind == "over":
                return int(run["status_code"] or 500), dict(run["result"] or {})
        return self._execute(run, req, inputs, taken_over=kind == TAKEOVER)

    def _wait(self, run: RunView, deadline: float) -> tuple[RunView, str]:
        """Wait for the run to be over ("over"), or take it over once its lease lapsed."""
        LOG.info("decommission of %s: joining run %s", run["node"], run["id"])

        def over() -> tuple[RunView, str] | NotYet[RunView]:
            current = self.store.get(run["id"]) or run
            if current["state"] != RUNNING:
                return current, "over"
            if float(current["lease_expires"] or 0) < self.store.clock() \
                    and self.store.take(run["id"]):
                return self.store.get(run["id"]) or current, TAKEOVER
            return NotYet(current)

        def still_running(current: RunView) -> tuple[RunView, str]:
            raise busy(current, f"The decommission of {current['node']} (run {current['id']}) "
                       f"is still running, at phase {current['phase']}; ask again to keep "
                       "waiting for it")

        return poll(over, deadline=deadline, interval=self.poll, expire=still_running)

    def _execute(self, run: RunView, req: RunRequest, inputs: Inputs, *,
                 taken_over: bool) -> tuple[int, JSONObject]:
        run_id, node = run["id"], req.node
        if taken_over:
            LOG.warning("decommission of %s: taking over run %s (its process stopped) at "
                        "phase %s", node, run_id, run["phase"])
        journal = RunJournal(self.store, run_id, {p["name"]: p for p in run["phases"]})
        started = as_float(run["params"].get("started") or None, self.svc.wall())
        try:
            store = self.store
            with Heartbeat(store, run_id, store.owner, store.lease, store.clock) as beat:
                clusters, nodes = inputs
                try:
                    messages = decommission(self.svc, node, clusters, req.params, nodes,
                                            journal=journal, started=started,
                                            alive=beat.alive)
                except PhaseStuck as exc:
                    self._stuck(run_id, exc, beat)
                    raise
        except (RunLost, PhaseStuck):
            raise
        except BerthError as exc:
            exc.details.setdefault("run", run_id)
            self.store.finish(run_id, FAILED, exc.code, exc.to_status())
            raise
        except Exception as exc:
            self.store.finish(run_id, FAILED, 500, InternalError(
                f"Decommission of {node} failed: {exc}", details={"node": node,
                                                                   "run": run_id}).to_status())
            raise
        body = status_body(200, f"Decommissioned {node}", messages=messages,
                           extra={"node": node, "run": run_id})
        self.store.finish(run_id, SUCCEEDED, 200, body)
        return 200, body

    def resume_lapsed(self, limit: int = 4) -> list[threading.Thread]:
        """Take over up to `limit` running runs whose process stopped (their lease lapsed)
        and run each on in a thread of its own, with nobody waiting for its answer: it is
        kept with the run, for the replay that comes later. A run whose processes stopped
        more than `max_takeovers` times is failed instead (a replay may still take it over)."""
        store = self.store
        taken = store.claim_units(store.owner, store.clock(), store.lease, limit)
        threads = [threading.Thread(target=self.resume, args=(run_id,), daemon=True,
                                    name=f"decommission-{run_id[:8]}") for run_id in taken]
        for thread in threads:
            thread.start()
        return threads

    def resume(self, run_id: str) -> None:
        """Run on a run this process has just taken over, as its request asked."""
        run = self.store.get(run_id)
        if run is None or run["state"] != RUNNING or run["lease_owner"] != self.store.owner:
            return
        wire = run["params"]
        current_marker.set(str(wire.get("marker") or "-"))
        if run["takeovers"] > self.max_takeovers:  # e.g. a phase that ends its process
            self._not_resumed(run, f"its Promenade process stopped {run['takeovers']} times "
                              "while running it")
            return
        kept = wire.get("request")
        if not isinstance(kept, dict):
            self._not_resumed(run, "its parameters were not kept with it (an earlier "
                              "Promenade version admitted it)")
            return
        req = RunRequest(run["node"], params_from(as_object(kept)), wire, run["fingerprint"],
                         run["created_by"], 0.0)
        ctx = RequestContext(marker=current_marker.get(), end_user=run["created_by"])
        try:
            inputs = self.svc.decommission_inputs(wire.get("design_ref"), ctx)
        except Exception as exc:
            why = exc.message if isinstance(exc, BerthError) else str(exc)
            self._not_resumed(run, f"its design could not be read: {why}")
            return
        try:
            self._execute(run, req, inputs, taken_over=True)
        except Exception as exc:  # kept as the run's answer by _execute
            LOG.warning("decommission of %s: resumed run %s ended with %s", run["node"],
                        run_id, exc)

    def _not_resumed(self, run: RunView, why: str) -> None:
        exc = RunNotResumable(
            f"The decommission of {run['node']} (run {run['id']}) stopped with its Promenade "
            f"process at phase {run['phase']} and could not be resumed: {why}. Send the "
            "request again: a new run starts from the cluster's state",
            details={"node": run["node"], "run": run["id"], "phase": run["phase"]})
        LOG.error("%s", exc.message)
        self.store.finish(run["id"], FAILED, exc.code, exc.to_status())

    def _stuck(self, run_id: str, exc: PhaseStuck, beat: Heartbeat) -> None:
        """The run fails with StepStuck at once; its node stays held (the lease renewed)
        until the stuck attempt returns, so no other decommission runs beside it."""
        exc.details.setdefault("run", run_id)
        self.store.finish(run_id, FAILED, exc.code, exc.to_status(), release=False)
        beat.keep_until(exc.returned, lambda: self.store.release(run_id))


def stuck_run(run: RunView) -> bool:
    """The run ended with a stuck attempt (StepStuck)."""
    return run["state"] == FAILED and (run["result"] or {}).get("reason") == STUCK
