"""The engine: claim an action, run its due steps (concurrently where allowed), persist outcomes.

Only the engine applies timeouts, retries with backoff, pause and stop; steps just return
an outcome. A crash leaves steps in `running`; the next worker to claim the action (once the
lease expires) runs them again with the same idempotency keys.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from common.audit import acting, current_actor, worker_actor
from common.context import current_marker
from common.engine import Attempts, ErrorView, judge, stuck, view_error
from common.errors import BerthError
from common.jsontypes import JSONObject
from common.runner import Hold
from common.workflow import Done, Failed, Outcome, Retry, StepPolicy
from shipyard_api.workflow.definitions import (
    ActionDefinition,
    FinishContext,
    StepContext,
    StepDef,
)
from shipyard_api.workflow.models import ActionRow, StepNote, StepRow
from shipyard_api.workflow.services import Services
from shipyard_api.workflow.states import TERMINAL_ACTION, TERMINAL_STEP, ActionState, StepState
from shipyard_api.workflow.store import ActionStore, LeaseLost

LOG = logging.getLogger(__name__)
A, S = ActionState, StepState
LIVE = (S.RUNNING.value, S.WAITING.value)
FAILING_SINCE = "failing_since"  # memo key: when the step's peer started failing
COLLECT_SLICE = 2.0  # a stop is noticed within this while steps run


@dataclass(frozen=True)
class EngineSettings:
    lease_seconds: float = 30.0
    hold_seconds: float = 5.0
    max_concurrent_nodes: int = 4
    max_poll_interval: float | None = None
    attempt_timeout: float | None = None  # for steps whose policy sets none (None: no limit)


class Engine:
    """Runs claimed actions for one worker identity (`owner`)."""

    def __init__(self, store: ActionStore, definitions: Mapping[str, ActionDefinition],
                 services: Services, *, owner: str, settings: EngineSettings | None = None,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 executor: Callable[[int], Executor] | None = None,
                 observe: Callable[[str, str, float], None] | None = None,
                 on_stuck: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.definitions = definitions
        self.services = services
        self.owner = owner
        self.settings = settings or EngineSettings()
        self.clock = clock
        self.sleep = sleep
        self._executor = executor or (lambda n: ThreadPoolExecutor(max_workers=n))
        self._observe = observe
        self.on_stuck = on_stuck  # told the step name of each stuck attempt (a metric)

    def step_ended(self, step: StepRow, state: StepState, now: float) -> None:
        """Report a step's end (name, final state, seconds since its first start)."""
        if self._observe is not None:
            self._observe(step.name, state.value, max(0.0, now - (step.started_at or now)))

    def run_once(self) -> bool:
        """Claim one due action and run it until it ends, pauses or waits; False if none."""
        action_id = self.store.claim(self.owner, self.clock(), self.settings.lease_seconds)
        if action_id is None:
            return False
        self.run_claimed(action_id, None)
        return True

    def run_claimed(self, action_id: str, hold: Hold | None) -> None:
        """Run an action whose lease we took until it ends, pauses or waits, or until the
        lease is lost (`hold`, renewed by a runner's heartbeat, says so)."""
        try:
            self.run_action(action_id, hold)
        except LeaseLost:
            LOG.warning("Lost the lease of action %s; another worker has it", action_id)
            if hold is not None:
                hold.lose()

    def run_action(self, action_id: str, hold: Hold | None = None) -> None:
        action = self.store.get(action_id)
        with acting(worker_actor("shipyard", action.user)):
            self._run_action(action, hold)

    def _run_action(self, action: ActionRow, hold: Hold | None) -> None:
        action_id = action.id
        definition = self.definitions[action.name]
        if action.state == A.PENDING.value:
            now = self.clock()
            self.store.transition(action_id, A.RUNNING, now, started_at=now)
        pool = self._executor(self.settings.max_concurrent_nodes + 1)
        run = _Run(self, definition, action_id, pool, hold)
        try:
            run.loop()
        finally:  # a stuck attempt's thread is not waited for: it ends when it ends
            pool.shutdown(wait=not run.abandoned)

    # -- helpers used by _Run -----------------------------------------------------------
    def context(self, action: ActionRow, step: StepRow, steps: list[StepRow]) -> StepContext:
        outputs = {s.step_id: s.output for s in steps if s.state == S.SUCCESS.value}
        return StepContext(
            action_id=action.id, action_name=action.name, parameters=action.parameters,
            marker=action.marker, user=action.user, revision_id=action.revision_id,
            step_id=step.step_id, name=step.name, node=step.node, attempt=step.attempts + 1,
            memo=dict(step.memo or {}), outputs=outputs, services=self.services,
            now=self.clock(), report=lambda details: self.store.report_progress(
                action.id, self.owner, step.step_id, details))

    def cap(self, delay: float) -> float:
        limit = self.settings.max_poll_interval
        return max(0.0, delay if limit is None else min(delay, limit))


def execute(defn: StepDef, ctx: StepContext) -> Outcome | BaseException:
    """Run one step in a worker thread; errors are returned for the engine to judge."""
    current_marker.set(ctx.marker)
    current_actor.set(worker_actor("shipyard", ctx.user))  # e.g. a step tagging a revision
    try:
        return defn.run(ctx)
    except Exception as exc:  # the engine decides between retry and failure
        return exc


def _note(now: float, message: str, step: StepRow) -> StepNote:
    """A line of the step's log; `try` counts the step's failed attempts before it plus one
    (a step that waits and polls again stays in the same try, as a rescheduled task does)."""
    return {"at": now, "message": message, "try": step.failures + 1}


class _Run:
    """One stretch of work on one claimed action."""

    def __init__(self, engine: Engine, definition: ActionDefinition, action_id: str,
                 pool: Executor, hold: Hold | None) -> None:
        self.e = engine
        self.hold = hold
        self.defn = definition
        self.action_id = action_id
        self.pool = pool
        # each running attempt: its step, its policy, when it began
        self.in_flight: dict[Future[Outcome | BaseException],
                             tuple[str, StepPolicy, float]] = {}
        self.abandoned: set[Future[Outcome | BaseException]] = set()  # stuck: never heard
        self.cancelled: set[str] = set()  # steps whose remote work was asked to stop

    def loop(self) -> None:
        e = self.e
        current_marker.set(e.store.get(self.action_id).marker)
        while True:
            now = e.clock()
            if (self.hold is not None and self.hold.lost.is_set()) or not e.store.renew(
                    self.action_id, e.owner, now, e.settings.lease_seconds):
                raise LeaseLost(self.action_id)
            action = e.store.get(self.action_id)
            steps = e.store.steps(self.action_id)
            state = ActionState(action.state)
            self._skip_unreachable(steps, now)
            if state == A.STOPPING:
                self._cancel_remote(action, steps, [s for s in steps if s.state in LIVE])
            if state in (A.PAUSED, A.STOPPING) or state in TERMINAL_ACTION:
                if self.in_flight:
                    self._collect()
                    continue
                if state == A.STOPPING:
                    self._stop(action, steps, now)
                e.store.release(self.action_id, e.owner, now)
                return
            if all(s.state in {t.value for t in TERMINAL_STEP} for s in steps):
                self._finish(action, steps, now)
                return
            for step, policy, keys in self._due(action, steps, now):
                self._start(action, step, steps, policy, keys, now)
            if self.in_flight:
                self._collect()
                continue
            if not self._idle(steps, now):
                return

    def _idle(self, steps: list[StepRow], now: float) -> bool:
        """Nothing running: sleep until the next due step, or hand the action back."""
        dues = [s.next_attempt_at or now for s in steps if s.state == S.WAITING.value]
        next_due = min(dues) if dues else now + 1.0  # else blocked by a limit: look again soon
        if not dues or next_due - now > self.e.settings.hold_seconds:
            self.e.store.release(self.action_id, self.e.owner, next_due)
            return False
        self.e.sleep(max(0.0, next_due - now))
        return True

    def _skip_unreachable(self, steps: list[StepRow], now: float) -> None:
        states = {s.step_id: s.state for s in steps}
        dead = {S.FAILED.value, S.SKIPPED.value}
        changed = True
        while changed:
            changed = False
            for s in steps:
                if states[s.step_id] == S.PENDING.value and any(
                        states.get(d) in dead for d in s.depends_on):
                    self.e.store.save_step(self.action_id, self.e.owner, s.step_id, S.SKIPPED,
                                           ended_at=now, reason="DependencyFailed")
                    states[s.step_id] = s.state = S.SKIPPED.value
                    changed = True

    def _due(self, action: ActionRow, steps: list[StepRow],
             now: float) -> Iterator[tuple[StepRow, StepPolicy, set[str]]]:
        busy = {sid for sid, _, _ in self.in_flight.values()}
        states = {s.step_id: s.state for s in steps}
        active = _active_nodes(steps)
        held = {s.step_id: self._keys(action, s, steps) for s in steps if s.state in LIVE}
        held[""] = self.e.store.held_keys(self.action_id)  # other actions' exclusive steps
        for s in steps:
            if s.step_id in busy or not _ready(s, states, now):
                continue
            ctx = self.e.context(action, s, steps)
            policy = self.defn.step(s.name).policy(ctx)
            if s.started_at is not None and now - s.started_at > policy.timeout:
                self._cancel_remote(action, steps, [s])
                self._timeout(s, policy, now)
                continue
            if (s.node is not None and s.node not in active
                    and len(active) >= self.e.settings.max_concurrent_nodes):
                continue
            keys = self._keys(action, s, steps)
            if any(keys & other for sid, other in held.items() if sid != s.step_id):
                continue
            if s.node is not None:
                active.add(s.node)
            held[s.step_id] = keys
            yield s, policy, keys

    def _keys(self, action: ActionRow, step: StepRow, steps: list[StepRow]) -> set[str]:
        fn = self.defn.step(step.name).exclusive
        return fn(self.e.context(action, step, steps)) if fn else set()

    def _cancel_remote(self, action: ActionRow, steps: list[StepRow],
                       chosen: list[StepRow]) -> None:
        """Ask the peers to stop what these steps started (once per step; best effort)."""
        for s in chosen:
            cancel = self.defn.step(s.name).cancel
            if cancel is None or s.step_id in self.cancelled:
                continue
            self.cancelled.add(s.step_id)
            try:
                cancel(self.e.context(action, s, steps))
                LOG.info("Action %s step %s: remote work asked to stop", action.id, s.step_id)
            except Exception as exc:  # the peer may be down; the stop itself goes on
                LOG.warning("Action %s step %s: could not stop its remote work: %s",
                            action.id, s.step_id, exc)

    def _timeout(self, s: StepRow, policy: StepPolicy, now: float) -> None:
        msg = f"Step {s.step_id} did not finish within {policy.timeout:g} s"
        self.e.store.save_step(self.action_id, self.e.owner, s.step_id, S.FAILED, ended_at=now,
                               reason="Timeout", notes=[*s.notes, _note(now, msg, s)])
        s.state = S.FAILED.value
        self.e.step_ended(s, S.FAILED, now)

    def _start(self, action: ActionRow, step: StepRow, steps: list[StepRow],
               policy: StepPolicy, keys: set[str], now: float) -> None:
        memo: JSONObject = ({**(step.memo or {}), "exclusive": [*sorted(keys)]} if keys
                            else step.memo)
        self.e.store.save_step(self.action_id, self.e.owner, step.step_id, S.RUNNING,
                               attempts=step.attempts + 1, memo=memo,
                               started_at=step.started_at if step.started_at else now)
        ctx = self.e.context(action, step, steps)
        defn = self.defn.step(step.name)
        future = self.pool.submit(execute, defn, ctx)
        if policy.attempt_timeout is None and self.e.settings.attempt_timeout:
            policy = replace(policy, attempt_timeout=self.e.settings.attempt_timeout)
        self.in_flight[future] = (step.step_id, policy, now)
        step.state = S.RUNNING.value

    def _collect(self) -> None:
        done, _ = wait(list(self.in_flight), timeout=min(self.e.settings.lease_seconds / 3,
                                                         COLLECT_SLICE),
                       return_when=FIRST_COMPLETED)
        for future in done:
            sid, policy, _began = self.in_flight.pop(future)
            self._record(sid, policy, future.result())
        now = self.e.clock()
        for future, (sid, policy, began) in list(self.in_flight.items()):
            if future.done() or stuck(sid, "", policy, began, now) is None:
                continue
            step = next(s for s in self.e.store.steps(self.action_id) if s.step_id == sid)
            failed = stuck(sid, step.node or "the site", policy, began, now)
            assert failed is not None
            self._stuck(future, step, failed, now)

    def _stuck(self, future: Future[Outcome | BaseException], step: StepRow, failed: Failed,
               now: float) -> None:
        """An attempt ran past its attempt timeout while this worker lives and renews the
        action's lease (a thread cannot be stopped): the step fails with StepStuck, the
        attempt's result is discarded when it comes, and the step is not run again."""
        del self.in_flight[future]
        self.abandoned.add(future)
        LOG.error("Action %s: %s", self.action_id, failed.message)
        if self.e.on_stuck is not None:
            self.e.on_stuck(step.name)
        self._fail(step, failed, now)

    def _record(self, sid: str, policy: StepPolicy, result: Outcome | BaseException) -> None:
        e, now = self.e, self.e.clock()
        step = next(s for s in e.store.steps(self.action_id) if s.step_id == sid)
        LOG.log(logging.DEBUG if isinstance(result, Retry) else logging.INFO,
                "Action %s step %s: %s", self.action_id, sid, _describe(result))
        seen = _attempts(step, now)
        outcome, after = judge(sid, policy, seen, result, now, retry_unexpected=True,
                               poll=lambda r, _s, _n: e.cap(r.delay), describe=_cause)
        if isinstance(result, BaseException):
            self._record_error(step, result, outcome, after, now)
        elif isinstance(outcome, Done):
            notes = ([*step.notes, _note(now, outcome.message, step)] if outcome.message
                     else step.notes)
            e.store.save_step(self.action_id, e.owner, sid, S.SUCCESS, ended_at=now,
                              output=outcome.output, details=outcome.details, notes=notes,
                              next_attempt_at=None)
            e.step_ended(step, S.SUCCESS, now)
        elif isinstance(outcome, Retry):
            notes = ([*step.notes, _note(now, outcome.note, step)][-50:] if outcome.note
                     else step.notes)
            memo = {k: v for k, v in {**(step.memo or {}), **outcome.memo}.items()
                    if k != FAILING_SINCE}
            e.store.save_step(self.action_id, e.owner, sid, S.WAITING, notes=notes,
                              next_attempt_at=after.next_at, memo=memo,
                              details=outcome.details or step.details)
        else:
            if outcome.reason == "Timeout":  # the wait would end past the step's timeout
                action = e.store.get(self.action_id)
                self._cancel_remote(action, e.store.steps(self.action_id), [step])
            self._fail(step, outcome, now)

    def _fail(self, step: StepRow, outcome: Failed, now: float) -> None:
        e = self.e
        e.store.save_step(self.action_id, e.owner, step.step_id, S.FAILED, ended_at=now,
                          reason=outcome.reason,
                          details={**outcome.details, "message": outcome.message},
                          notes=[*step.notes, _note(now, f"{outcome.reason}: {outcome.message}",
                                                    step)])
        step.state = S.FAILED.value
        e.step_ended(step, S.FAILED, now)

    def _record_error(self, step: StepRow, exc: BaseException, outcome: Outcome,
                      after: Attempts, now: float) -> None:
        """An attempt raised: judged retried (waiting, its failures and since when kept) or
        failed; the step's log says which attempt failed and why."""
        e = self.e
        error = view_error(exc, retry_unexpected=True)
        details: JSONObject = (exc.to_status() if isinstance(exc, BerthError)
                               else {"error": str(exc)})
        memo: JSONObject = {**(step.memo or {}), FAILING_SINCE: after.failing_since}
        outage = now - (after.failing_since or now)
        text = f"Attempt {step.attempts} failed: {error.reason}: {exc}"
        if isinstance(outcome, Retry):
            text += f"; retrying in {outcome.delay:g} s" + (
                f" (failing for {outage:.0f} s)" if outage else "")
            e.store.save_step(self.action_id, e.owner, step.step_id, S.WAITING,
                              failures=after.failures, details=details, memo=memo,
                              next_attempt_at=after.next_at,
                              notes=[*step.notes, _note(now, text, step)][-50:])
            return
        assert isinstance(outcome, Failed)
        e.store.save_step(self.action_id, e.owner, step.step_id, S.FAILED,
                          failures=after.failures, details={**details, "message": outcome.message},
                          reason=outcome.reason, ended_at=now,
                          notes=[*step.notes, _note(now, text, step)][-50:])
        e.step_ended(step, S.FAILED, now)

    def _stop(self, action: ActionRow, steps: list[StepRow], now: float) -> None:
        for s in steps:
            if s.state in (S.PENDING.value, S.WAITING.value):
                self.e.store.save_step(self.action_id, self.e.owner, s.step_id, S.SKIPPED,
                                       ended_at=now, reason="Stopped")
            elif s.state == S.RUNNING.value:
                self.e.store.save_step(self.action_id, self.e.owner, s.step_id, S.FAILED,
                                       ended_at=now, reason="Stopped")
        self._call_finish(action, self.e.store.steps(self.action_id), False)
        self.e.store.transition(self.action_id, A.STOPPED, now, reason="Stopped",
                                message="Stopped by an operator")

    def _finish(self, action: ActionRow, steps: list[StepRow], now: float) -> None:
        ok = all(s.state == S.SUCCESS.value for s in steps)
        message = self._call_finish(action, steps, ok)
        first = next((s for s in steps if s.state == S.FAILED.value), None)
        if ok and not message:
            self.e.store.transition(self.action_id, A.COMPLETE, now, reason="Success",
                                    message="All steps succeeded")
        else:
            reason = first.reason if first else "FinishFailed"
            text = _failure_text(first) if first else message
            self.e.store.transition(self.action_id, A.FAILED, now, reason=reason,
                                    message=text)
        self.e.store.release(self.action_id, self.e.owner, now)

    def _call_finish(self, action: ActionRow, steps: list[StepRow], ok: bool) -> str:
        if self.defn.finish is None:
            return ""
        ctx = FinishContext(action_id=action.id, revision_id=action.revision_id, succeeded=ok,
                            step_states={s.step_id: s.state for s in steps},
                            outputs={s.step_id: s.output for s in steps},
                            services=self.e.services)
        try:
            self.defn.finish(ctx)
        except Exception as exc:  # a failed finaliser fails the action, it does not crash us
            LOG.exception("Finishing action %s failed", action.id)
            return f"Finishing the action failed: {exc}"
        return ""


def _failure_text(step: StepRow) -> str:
    """The action's message: which step failed, and the cause in the step's own words."""
    cause = str((step.details or {}).get("message") or "")
    text = f"Step {step.step_id} failed: {step.reason}"
    return f"{text}: {cause}" if cause and cause != step.reason else text


def _attempts(step: StepRow, now: float) -> Attempts:
    """The step's attempt state as its row keeps it (the attempt being judged counted)."""
    since = (step.memo or {}).get(FAILING_SINCE)
    return Attempts(started=step.started_at or now, attempts=step.attempts,
                    failures=step.failures,
                    failing_since=float(since) if isinstance(since, int | float) else None)


def _cause(name: str, error: ErrorView, failures: int, outage: float) -> str:
    """A failed step's cause as Shipyard shows it (the action names the step)."""
    if error.retry and outage:
        return f"{error.message} (failing for {outage:.0f} s, {failures} attempts)"
    return error.message


def _describe(result: Outcome | BaseException) -> str:
    if isinstance(result, Done):
        return f"done {result.message}".strip()
    if isinstance(result, Retry):
        return f"again in {result.delay:g} s {result.note}".strip()
    if isinstance(result, Failed):
        return f"failed {result.reason}: {result.message}"
    return f"error {type(result).__name__}: {result}"


def _ready(s: StepRow, states: Mapping[str, str], now: float) -> bool:
    if s.state == S.PENDING.value:
        return all(states.get(d) == S.SUCCESS.value for d in s.depends_on)
    if s.state == S.WAITING.value:
        return (s.next_attempt_at or 0.0) <= now
    return s.state == S.RUNNING.value  # left running by a worker that died


def _active_nodes(steps: list[StepRow]) -> set[str]:
    """Nodes whose chain has started and not ended."""
    by_node: dict[str, set[str]] = {}
    for s in steps:
        if s.node is not None:
            by_node.setdefault(s.node, set()).add(s.state)
    terminal = {t.value for t in TERMINAL_STEP}
    return {n for n, st in by_node.items()
            if (st & set(LIVE)) or (S.SUCCESS.value in st and not st <= terminal)}
