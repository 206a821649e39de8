"""The attempt cycle of the one engine, and the port it persists through: an attempt begins
(its state kept before its effect), runs (an exception is its result), is judged
(common.engine.judge) and its outcome is kept: done with its output, waiting with its next
attempt, or failed with its reason. Each service's store side implements the `Journal`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from common.engine import Attempts, Describe, begin, describe_failure, judge
from common.workflow import Done, Outcome, Retry, StepDef, StepPolicy

C = TypeVar("C")  # what a step gets
K = TypeVar("K", contravariant=True)  # what a journal knows a step's attempt by
Result = Outcome | BaseException  # what one attempt gave (an exception is judged too)
Poll = Callable[[Retry, Attempts, float], float]  # a step's poll schedule (see judge)


@dataclass(frozen=True)
class Judged:
    """One attempt judged at `at` (the journal's time): the outcome to keep, the step's
    attempt state after it, and what the attempt itself gave (its own outcome, or the
    exception it raised)."""

    outcome: Outcome
    state: Attempts
    result: Result
    at: float

    @property
    def error(self) -> BaseException | None:
        """The exception the attempt raised (None: it returned an outcome)."""
        return self.result if isinstance(self.result, BaseException) else None


class Journal(Protocol[K]):
    """Where a step's attempts are kept (each service's store side)."""

    def now(self) -> float:
        """The time attempt states count in."""

    def begun(self, key: K, now: float) -> Attempts:
        """An attempt of the step begins at `now`: its attempt state as it begins
        (common.engine.begin of what was kept), kept before the attempt has any effect."""

    def done(self, key: K, judged: Judged) -> None:
        """The step finished (`judged.outcome` is a Done: its output, details, records)."""

    def waiting(self, key: K, judged: Judged) -> None:
        """The step runs again at `judged.state.next_at` (`judged.outcome` is a Retry)."""

    def failed(self, key: K, judged: Judged) -> None:
        """The step failed for good (`judged.outcome` is a Failed: its reason)."""


def run_step(step: StepDef[C] | Callable[[C], Outcome], ctx: C) -> Result:
    """One attempt of a step: its outcome, or the exception it raised (judged, never raised:
    a bug in a step fails the step, not the worker)."""
    try:
        return step.run(ctx) if isinstance(step, StepDef) else step(ctx)
    except Exception as exc:
        return exc


def keep(journal: Journal[K], key: K, judged: Judged) -> Judged:
    """Keep a judged attempt in the journal: done, waiting or failed."""
    if isinstance(judged.outcome, Done):
        journal.done(key, judged)
    elif isinstance(judged.outcome, Retry):
        journal.waiting(key, judged)
    else:
        journal.failed(key, judged)
    return judged


def settle(journal: Journal[K], key: K, name: str, policy: StepPolicy, seen: Attempts,
           result: Result, *, poll: Poll | None = None, retry_unexpected: bool = False,
           describe: Describe = describe_failure) -> Judged:
    """Judge what an attempt begun as `seen` gave (common.engine.judge, on the journal's
    clock) and keep the outcome in the journal."""
    now = journal.now()
    outcome, state = judge(name, policy, seen, result, now, poll=poll,
                           retry_unexpected=retry_unexpected, describe=describe)
    return keep(journal, key, Judged(outcome, state, result, now))


def attempt(step: StepDef[C], ctx: C, journal: Journal[K], key: K, *,
            policy: StepPolicy | None = None, poll: Poll | None = None,
            retry_unexpected: bool = False, describe: Describe = describe_failure,
            run: Callable[[], Result] | None = None,
            kept: Callable[[], bool] | None = None) -> Judged | None:
    """One attempt of `step`: begun in the journal, run (`run`, default `run_step`; a `run`
    may raise to abandon the cycle, keeping nothing more), judged by `policy` (default the
    step's) and kept. `kept`, asked once the attempt returned, says whether its result still
    counts (False: the attempt was found stuck or the unit is held elsewhere now; nothing is
    kept and None returned). The judged attempt; a Retry's delay follows `poll`."""
    seen = journal.begun(key, journal.now())
    result = run() if run is not None else run_step(step, ctx)
    if kept is not None and not kept():
        return None
    return settle(journal, key, step.name, policy or step.policy(ctx), seen, result,
                  poll=poll, retry_unexpected=retry_unexpected, describe=describe)


@dataclass
class Memory:
    """A journal holding each step's attempt state in memory (a step run outside a store)."""

    clock: Callable[[], float]
    states: dict[str, Attempts]

    def now(self) -> float:
        return self.clock()

    def begun(self, key: str, now: float) -> Attempts:
        self.states[key] = begin(self.states.get(key) or Attempts.first(now), now)
        return self.states[key]

    def done(self, key: str, judged: Judged) -> None:
        self.states[key] = judged.state

    def waiting(self, key: str, judged: Judged) -> None:
        self.states[key] = judged.state

    def failed(self, key: str, judged: Judged) -> None:
        self.states[key] = judged.state
