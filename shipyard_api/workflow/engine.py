"""The engine: claim an action, run its due steps (concurrently where allowed), persist outcomes.

Only the engine applies timeouts, retries with backoff, pause and stop; steps just return
an outcome. A crash leaves steps in `running`; the next worker to claim the action (once the
lease expires) runs them again with the same idempotency keys.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace

from common.audit import acting, current_actor, worker_actor
from common.context import current_marker
from common.engine import Attempts, stuck
from common.journal import Result, run_step
from common.jsontypes import JSONObject
from common.runner import Hold
from common.schedule import Schedule, Start
from common.workflow import StepPolicy
from shipyard_api.workflow.definitions import (
    ActionDefinition,
    FinishContext,
    StepContext,
    StepDef,
)
from shipyard_api.workflow.models import ActionRow, StepRow
from shipyard_api.workflow.outcomes import StepAttempt, StepRecorder, failure_text, note
from shipyard_api.workflow.services import Services
from shipyard_api.workflow.states import TERMINAL_ACTION, TERMINAL_STEP, ActionState, StepState
from shipyard_api.workflow.store import ActionStore, LeaseLost

LOG = logging.getLogger(__name__)
A, S = ActionState, StepState
LIVE = (S.RUNNING.value, S.WAITING.value)
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
        hold = hold or Hold(action_id)
        schedule = Schedule(_Run(self, definition, action_id, hold), pool, hold,
                            clock=self.clock, sleep=self.sleep,
                            slice_seconds=min(self.settings.lease_seconds / 3, COLLECT_SLICE))
        current_marker.set(action.marker)
        try:
            schedule.run()
            if hold.lost.is_set():
                raise LeaseLost(action_id)
        finally:  # a stuck attempt's thread is not waited for: it ends when it ends
            pool.shutdown(wait=not schedule.abandoned)

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


def execute(defn: StepDef, ctx: StepContext) -> Result:
    """Run one step in a worker thread; errors are returned for the engine to judge."""
    current_marker.set(ctx.marker)
    current_actor.set(worker_actor("shipyard", ctx.user))  # e.g. a step tagging a revision
    return run_step(defn, ctx)


class _Run:
    """One stretch of work on one claimed action: the plan of its common schedule (which
    steps are due from the action's DAG, its exclusive keys and node concurrency, re-read
    from the store at each turn)."""

    def __init__(self, engine: Engine, definition: ActionDefinition, action_id: str,
                 hold: Hold) -> None:
        self.e = engine
        self.hold = hold
        self.defn = definition
        self.action_id = action_id
        # each running attempt: what the journal knows it by, its policy, its begun state
        self.begun: dict[str, tuple[StepAttempt, StepPolicy, Attempts]] = {}
        self.cancelled: set[str] = set()  # steps whose remote work was asked to stop
        self.steps: list[StepRow] = []  # as the last turn read them
        self.renewed_at: float | None = None  # when this run last renewed the lease
        self.out = StepRecorder(engine.store, engine.owner, action_id, clock=engine.clock,
                                cap=engine.cap, ended=engine.step_ended, cancel=self._cancel)

    def due(self, now: float, running: Collection[str]) -> list[Start[str, Result]] | None:
        e = self.e
        if self.hold.lost.is_set() or not self._renew(now):
            raise LeaseLost(self.action_id)
        action = e.store.get(self.action_id)
        steps = self.steps = e.store.steps(self.action_id, details=False)
        state = ActionState(action.state)
        self._skip_unreachable(steps, now)
        if state == A.STOPPING:
            self._cancel_remote(action, steps, [s for s in steps if s.state in LIVE])
        if state in (A.PAUSED, A.STOPPING) or state in TERMINAL_ACTION:
            if running:  # collect what runs first
                return []
            if state == A.STOPPING:
                self._stop(action, steps, now)
            e.store.release(self.action_id, e.owner, now)
            return None
        if all(s.state in {t.value for t in TERMINAL_STEP} for s in steps):
            self._finish(action, steps, now)
            return None
        return [self._start(action, step, steps, policy, keys, now)
                for step, policy, keys in self._due(action, steps, set(running), now)]

    def _renew(self, now: float) -> bool:
        """Renew the action's lease at most every third of it (a turn comes each time an
        attempt ends: a write per turn was most of the engine's own time between steps).
        A lease renewed less than a third of it ago still has two thirds to run, and a claim
        takes only an expired lease, so no other worker can hold the action meanwhile; a
        step's every write checks the holder anyway (ActionStore.save_step), and a runner's
        heartbeat renews the lease too."""
        lease = self.e.settings.lease_seconds
        if self.renewed_at is not None and now - self.renewed_at < lease / 3:
            return True
        if not self.e.store.renew(self.action_id, self.e.owner, now, lease):
            return False
        self.renewed_at = now
        return True

    def next_due(self) -> float | None:
        return None  # a waiting step is looked at again when an attempt ends or each slice

    def idle(self, now: float) -> float | None:
        """Nothing running: sleep until the next due step, or hand the action back."""
        dues = [s.next_attempt_at or now for s in self.steps if s.state == S.WAITING.value]
        next_due = min(dues) if dues else now + 1.0  # else blocked by a limit: look again soon
        if not dues or next_due - now > self.e.settings.hold_seconds:
            self.e.store.release(self.action_id, self.e.owner, next_due)
            return None
        return next_due

    def ended(self, sid: str, result: Result) -> None:
        self.out.record(*self.begun.pop(sid), result)

    def stuck(self, sid: str, began: float, now: float) -> None:
        """An attempt ran past its attempt timeout while this worker lives and renews the
        action's lease (a thread cannot be stopped): the step fails with StepStuck, the
        attempt's result is discarded when it comes, and the step is not run again."""
        step = self.out.step(sid)
        failed = stuck(sid, step.node or "the site", self.begun.pop(sid)[1], began, now)
        assert failed is not None
        LOG.error("Action %s: %s", self.action_id, failed.message)
        if self.e.on_stuck is not None:
            self.e.on_stuck(step.name)
        self.out.fail(step, failed, now)

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

    def _due(self, action: ActionRow, steps: list[StepRow], busy: set[str],
             now: float) -> Iterator[tuple[StepRow, StepPolicy, set[str]]]:
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

    def _cancel(self, step: StepRow) -> None:
        action = self.e.store.get(self.action_id)
        self._cancel_remote(action, self.e.store.steps(self.action_id), [step])

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
                               reason="Timeout", notes=[*s.notes, note(now, msg, s)])
        s.state = S.FAILED.value
        self.e.step_ended(s, S.FAILED, now)

    def _start(self, action: ActionRow, step: StepRow, steps: list[StepRow],
               policy: StepPolicy, keys: set[str], now: float) -> Start[str, Result]:
        memo: JSONObject = ({**(step.memo or {}), "exclusive": [*sorted(keys)]} if keys
                            else step.memo)
        key = StepAttempt(step, memo)
        seen = self.out.begun(key, now)  # the attempt counted before its effect
        ctx = self.e.context(action, step, steps)
        defn = self.defn.step(step.name)
        if policy.attempt_timeout is None and self.e.settings.attempt_timeout:
            policy = replace(policy, attempt_timeout=self.e.settings.attempt_timeout)
        self.begun[step.step_id] = key, policy, seen
        step.state = S.RUNNING.value
        return Start(step.step_id, lambda _watch: execute(defn, ctx), policy.attempt_timeout)

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
            text = (failure_text(self.e.store.step(self.action_id, first.step_id)) if first
                    else message)  # the turn's rows are read without their details
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
