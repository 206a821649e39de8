"""Runs a decommission's phases as step definitions of the one engine: each attempt goes
through the common attempt cycle (common.journal: begun, run, judged, kept, as Shipyard's and
Drydock's steps do), kept in the run's phase records through `PhaseJournal`, and an attempt
running past its attempt timeout while the run's holder lives fails the decommission as
StepStuck."""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from common.engine import STUCK, Attempts, begin, stuck
from common.errors import BerthError, InternalError
from common.journal import Judged, Result, attempt, run_step
from common.status import Message, simple_message
from common.workflow import Done, Failed, Retry, StepDef, StepPolicy
from promenade_api.db.runs import PhaseState
from promenade_api.errors import DisassociateStepFailure, OperationCancelled

LOG = logging.getLogger(__name__)
C = TypeVar("C")


class Phase(NamedTuple, Generic[C]):
    name: str
    step: StepDef[C] | str  # its definition, or why it is skipped
    fatal: bool  # its failure stops the decommission (else it is a warning)


class PhaseStuck(InternalError):
    """An attempt of a phase ran past its attempt timeout while the run's holder lived.
    `returned` is set once the attempt's thread returns (its result is discarded)."""

    reason, title, retry = STUCK, "Step stuck", False
    returned: threading.Event


class Journal(Protocol):
    """Where the phases' progress is kept, the store side of `PhaseJournal` (a durable run's
    phase records: decommission_run.RunJournal; or the call itself: NoJournal)."""

    def now(self) -> float:
        """The time its attempt states count in (the run's wall clock)."""

    def recorded(self, name: str) -> list[Message] | None:
        """The messages of a phase that already has its outcome (it is not run again)."""

    def started(self, name: str) -> tuple[Attempts, list[Message]]:
        """Record an attempt's start before its effect: the attempt state as it begins
        (common.engine.begin), and messages about an earlier start without an outcome."""

    def ended(self, name: str, state: PhaseState, outcome: str, messages: list[Message],
              attempts: Attempts) -> None:
        """Record an attempt's end and the phase's attempt state after it."""


@dataclass
class NoJournal:
    """Progress kept only in the call itself."""

    clock: Callable[[], float]
    seen: dict[str, Attempts] = field(default_factory=dict)

    def now(self) -> float:
        return self.clock()

    def recorded(self, name: str) -> list[Message] | None:
        return None

    def started(self, name: str) -> tuple[Attempts, list[Message]]:
        now = self.clock()
        self.seen[name] = begin(self.seen.get(name) or Attempts.first(now), now)
        return self.seen[name], []

    def ended(self, name: str, state: PhaseState, outcome: str, messages: list[Message],
              attempts: Attempts) -> None:
        self.seen[name] = attempts


@dataclass(frozen=True)
class Env:
    """What the phases run with: the clocks, whether the run's holder still holds the run
    (a stuck attempt is only declared while it does), and who counts stuck attempts."""

    node: str
    clock: Callable[[], float]  # measures an attempt's run in this process (monotonic)
    sleep: Callable[[float], None]
    alive: Callable[[], bool] = lambda: True
    on_stuck: Callable[[str], None] | None = None


def run_phases(plan: Sequence[Phase[C]], ctx: C, journal: Journal, env: Env) -> list[Message]:
    """Run every phase in order, each through the engine's attempt cycle; a phase the journal
    has an outcome for is not run again. A fatal phase's failure raises DisassociateStepFailure
    (a cancellation OperationCancelled, a stuck attempt PhaseStuck) with the messages so far."""
    messages: list[Message] = []
    for name, step, fatal in plan:
        done = journal.recorded(name)
        if done is not None:
            messages += done
        elif isinstance(step, str):
            messages.append(simple_message(f"{name}: {step}", error=False, step=name))
            journal.ended(name, "skipped", step, messages[-1:], Attempts.first(journal.now()))
        else:
            LOG.info("decommission %s: step %s", env.node, name)
            _run_phase(step, PhaseRun(name, fatal, messages, len(messages)), ctx, journal, env)
    return messages


@dataclass
class PhaseRun:
    """What the attempt cycle knows a phase by: its name, whether its failure stops the
    decommission, the messages so far (the phase's own from `mark` on) and the attempt state
    its running attempt began with."""

    name: str
    fatal: bool
    messages: list[Message]
    mark: int
    seen: Attempts | None = None

    @property
    def own(self) -> list[Message]:
        return self.messages[self.mark:]


@dataclass(frozen=True)
class PhaseJournal:
    """The attempt cycle's journal of the phases (common.journal.Journal[PhaseRun]): a
    phase's begin and judged outcome as the run's phase records (`journal`: started, ended),
    with the messages each outcome adds."""

    journal: Journal

    def now(self) -> float:
        return self.journal.now()

    def begun(self, phase: PhaseRun, now: float) -> Attempts:
        phase.seen, notes = self.journal.started(phase.name)
        phase.messages += notes
        return phase.seen

    def waiting(self, phase: PhaseRun, judged: Judged) -> None:
        assert isinstance(judged.outcome, Retry)
        self.journal.ended(phase.name, "running", judged.outcome.note, phase.own, judged.state)

    def done(self, phase: PhaseRun, judged: Judged) -> None:
        assert isinstance(judged.outcome, Done)
        phase.messages += judged.outcome.records
        self.journal.ended(phase.name, "succeeded", "succeeded", phase.own, judged.state)

    def failed(self, phase: PhaseRun, judged: Judged) -> None:
        name, result, outcome = phase.name, judged.result, judged.outcome
        assert isinstance(outcome, Failed)
        if isinstance(result, OperationCancelled):
            phase.messages.append(simple_message(f"{name}: cancelled", step=name))
            self.journal.ended(name, "failed", "cancelled", phase.own, judged.state)
            return
        if isinstance(result, BerthError):
            phase.messages += _failure(name, result, phase.fatal)
        else:  # a step's own Failed, a wait past its timeout, or a bug
            phase.messages.append(simple_message(f"{name}: {outcome.message} "
                                                 f"({outcome.reason})", error=phase.fatal,
                                                 step=name))
        self.journal.ended(name, "failed" if phase.fatal else "failed-not-fatal",
                           _why(judged), phase.own, judged.state)


def _why(judged: Judged) -> str:
    """A failed phase's cause: the error's headline, or the failure's own message."""
    if isinstance(judged.result, BerthError):
        return judged.result.headline()
    return judged.outcome.message if isinstance(judged.outcome, Failed) else ""


def _run_phase(step: StepDef[C], phase: PhaseRun, ctx: C, journal: Journal, env: Env) -> None:
    policy, cycle = step.policy(ctx), PhaseJournal(journal)
    while True:
        judged = attempt(step, ctx, cycle, phase, policy=policy,
                         run=lambda: _attempt(step, ctx, policy, env, journal, phase))
        assert judged is not None  # no `kept`: every returned attempt counts
        if not isinstance(judged.outcome, Retry):
            break
        env.sleep(judged.outcome.delay)
    if not isinstance(judged.outcome, Done):
        _failed(phase, judged, env)


def _failed(phase: PhaseRun, judged: Judged, env: Env) -> None:
    """Raise what a failed phase means (its failure is kept in the journal already)."""
    name, node, result, messages = phase.name, env.node, judged.result, phase.messages
    if isinstance(result, OperationCancelled):
        LOG.warning("decommission %s: cancelled before or during %s", node, name)
        raise OperationCancelled(result.message, messages=list(messages),
                                 details={"node": node, "phase": name}) from result
    if isinstance(result, BaseException) and not isinstance(result, BerthError):
        raise result
    why = _why(judged)
    if not phase.fatal:
        LOG.warning("decommission %s: %s failed (not fatal): %s", node, name, why)
        return
    LOG.warning("decommission %s: step %s failed: %s", node, name, why)
    raise DisassociateStepFailure(
        f"Decommission of {node} failed at step {name}: {why}", messages=messages,
        details={"node": node, "failed_step": name}) from (
            result if isinstance(result, BaseException) else None)


def _attempt(step: StepDef[C], ctx: C, policy: StepPolicy, env: Env, journal: Journal,
             phase: PhaseRun) -> Result:
    """One attempt's outcome or exception: run here without an attempt timeout, else in a
    thread of its own watched against it (a thread cannot be stopped: a stuck attempt is
    abandoned, its late result discarded)."""
    if policy.attempt_timeout is None:
        return run_step(step, ctx)
    box: list[Result] = []
    returned = threading.Event()

    def one() -> None:
        try:
            box.append(step.run(ctx))
        except BaseException as exc:  # handed to the waiting request
            box.append(exc)
        finally:
            returned.set()

    began = env.clock()
    threading.Thread(target=contextvars.copy_context().run, args=(one,), daemon=True,
                     name=f"decommission-{env.node}-{step.name}").start()
    wait = min(0.25, max(policy.attempt_timeout / 20, 0.01))
    while not returned.wait(wait):
        failed = stuck(step.name, env.node, policy, began, env.clock())
        if failed is not None and env.alive():
            _stuck(phase, failed, returned, journal, env)
    if not isinstance(box[0], Exception) and isinstance(box[0], BaseException):
        raise box[0]  # the process is stopping
    return box[0]


def _stuck(phase: PhaseRun, failed: Failed, returned: threading.Event, journal: Journal,
           env: Env) -> None:
    name, messages = phase.name, phase.messages
    assert phase.seen is not None  # begun before it ran
    LOG.error("decommission %s: %s", env.node, failed.message)
    if env.on_stuck is not None:
        env.on_stuck(name)
    messages.append(simple_message(f"{failed.message} ({STUCK})", step=name))
    journal.ended(name, "failed", failed.message, phase.own, phase.seen)
    exc = PhaseStuck(f"Decommission of {env.node} failed at step {name}: {failed.message}",
                     messages=messages,
                     details={"node": env.node, "failed_step": name, **failed.details})
    exc.returned = returned
    raise exc


def _failure(name: str, exc: BerthError, fatal: bool) -> list[Message]:
    failed = [simple_message(f"{name}: {exc.message} ({exc.instance_reason})", error=fatal,
                             step=name)]
    return failed + [{**m, "error": fatal and m.get("error", True), "step": name}
                     for m in exc.messages if m.get("message") != exc.message]
