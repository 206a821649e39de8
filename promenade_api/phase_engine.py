"""Runs a decommission's phases as step definitions of the one engine: each attempt's outcome
or exception is judged by common.engine (as Shipyard's and Drydock's steps are), its attempt
state is kept in the run's journal, and an attempt running past its attempt timeout while the
run's holder lives fails the decommission as StepStuck."""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from common.engine import STUCK, Attempts, begin, judge, stuck
from common.errors import BerthError, InternalError
from common.status import Message, simple_message
from common.workflow import Done, Failed, Outcome, Retry, StepDef, StepPolicy
from promenade_api.db.runs import PhaseState
from promenade_api.errors import DisassociateStepFailure, OperationCancelled

LOG = logging.getLogger(__name__)
C = TypeVar("C")
Result = Outcome | BaseException


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
    """Where the phases' progress is kept (a durable run: decommission_run.RunJournal)."""

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
    """Run every phase in order, each through the engine's judge; a phase the journal has an
    outcome for is not run again. A fatal phase's failure raises DisassociateStepFailure (a
    cancellation OperationCancelled, a stuck attempt PhaseStuck) with the messages so far."""
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
            _run_phase(step, fatal, ctx, journal, env, messages)
    return messages


def _run_phase(step: StepDef[C], fatal: bool, ctx: C, journal: Journal, env: Env,
               messages: list[Message]) -> None:
    name, policy, mark = step.name, step.policy(ctx), len(messages)
    while True:
        seen, notes = journal.started(name)
        messages += notes
        result = _attempt(step, ctx, policy, env, seen, journal, messages, mark)
        outcome, seen = judge(name, policy, seen, result, journal.now())
        if not isinstance(outcome, Retry):
            break
        journal.ended(name, "running", outcome.note, messages[mark:], seen)
        env.sleep(outcome.delay)
    if isinstance(outcome, Done):
        messages += outcome.records
        journal.ended(name, "succeeded", "succeeded", messages[mark:], seen)
        return
    _failed(name, fatal, outcome, result, journal, env, seen, messages, mark)


def _failed(name: str, fatal: bool, outcome: Failed, result: Result, journal: Journal,
            env: Env, seen: Attempts, messages: list[Message], mark: int) -> None:
    node = env.node
    if isinstance(result, OperationCancelled):
        LOG.warning("decommission %s: cancelled before or during %s", node, name)
        messages.append(simple_message(f"{name}: cancelled", step=name))
        journal.ended(name, "failed", "cancelled", messages[mark:], seen)
        raise OperationCancelled(result.message, messages=list(messages),
                                 details={"node": node, "phase": name}) from result
    if isinstance(result, BerthError):
        messages += _failure(name, result, fatal)
        why = result.headline()
    else:  # a step's own Failed, a wait past its timeout, or a bug (raised as it is)
        messages.append(simple_message(f"{name}: {outcome.message} ({outcome.reason})",
                                       error=fatal, step=name))
        why = outcome.message
    journal.ended(name, "failed" if fatal else "failed-not-fatal", why, messages[mark:], seen)
    if isinstance(result, BaseException) and not isinstance(result, BerthError):
        raise result
    if not fatal:
        LOG.warning("decommission %s: %s failed (not fatal): %s", node, name, why)
        return
    LOG.warning("decommission %s: step %s failed: %s", node, name, why)
    raise DisassociateStepFailure(
        f"Decommission of {node} failed at step {name}: {why}", messages=messages,
        details={"node": node, "failed_step": name}) from (
            result if isinstance(result, BaseException) else None)


def _attempt(step: StepDef[C], ctx: C, policy: StepPolicy, env: Env, seen: Attempts,
             journal: Journal, messages: list[Message], mark: int) -> Result:
    """One attempt's outcome or exception: run here without an attempt timeout, else in a
    thread of its own watched against it (a thread cannot be stopped: a stuck attempt is
    abandoned, its late result discarded)."""
    if policy.attempt_timeout is None:
        try:
            return step.run(ctx)
        except Exception as exc:
            return exc
    box: list[Result] = []
    returned = threading.Event()

    def attempt() -> None:
        try:
            box.append(step.run(ctx))
        except BaseException as exc:  # handed to the waiting request
            box.append(exc)
        finally:
            returned.set()

    began = env.clock()
    threading.Thread(target=contextvars.copy_context().run, args=(attempt,), daemon=True,
                     name=f"decommission-{env.node}-{step.name}").start()
    wait = min(0.25, max(policy.attempt_timeout / 20, 0.01))
    while not returned.wait(wait):
        failed = stuck(step.name, env.node, policy, began, env.clock())
        if failed is not None and env.alive():
            _stuck(step.name, failed, returned, journal, env, seen, messages, mark)
    if not isinstance(box[0], Exception) and isinstance(box[0], BaseException):
        raise box[0]  # the process is stopping
    return box[0]


def _stuck(name: str, failed: Failed, returned: threading.Event, journal: Journal, env: Env,
           seen: Attempts, messages: list[Message], mark: int) -> None:
    LOG.error("decommission %s: %s", env.node, failed.message)
    if env.on_stuck is not None:
        env.on_stuck(name)
    messages.append(simple_message(f"{failed.message} ({STUCK})", step=name))
    journal.ended(name, "failed", failed.message, messages[mark:], seen)
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
