"""What Shipyard's and Drydock's workflow engines share: states as enums with transition
tables and the one helper that applies such a table (raising the one transition error), what a
step returns (Done / Retry / Failed), the retry policy as data, and the step definition."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from common.errors import Conflict

E = TypeVar("E", bound=StrEnum)


class IllegalTransition(Conflict):
    """A state change its transition table does not allow (409)."""

    reason, title = "InvalidStateTransition", "Conflict"


def transition(table: Mapping[E, frozenset[E]], current: E, target: E, what: str, *,
               reason: str | None = None, title: str | None = None) -> E:
    """`target` when `table` allows `current` -> `target`; else IllegalTransition saying
    "<what> cannot go from <current> to <target>" (`reason` and `title` as given)."""
    if target not in table[current]:
        raise IllegalTransition(f"{what} cannot go from {current.value} to {target.value}",
                                reason=reason, title=title)
    return target


# -- what a step returns ----------------------------------------------------------------------

@dataclass(frozen=True)
class Done:
    """The step finished: `message` says what it did, `output` is kept for later steps,
    `details` shown to the operator, each of `records` becomes one more message."""

    message: str = ""
    output: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    records: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Retry:
    """Not finished yet: run the step again after `delay` seconds (a remote task still runs).
    `note` describes the situation; `memo` is saved with the step and handed back next time."""

    delay: float
    note: str = ""
    memo: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """The step failed for good: `reason` is a code (CamelCase), `message` says why."""

    reason: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.message:
            object.__setattr__(self, "message", self.reason)


Outcome = Done | Retry | Failed


def done(output: dict[str, Any] | None = None, *, details: dict[str, Any] | None = None,
         note: str = "") -> Done:
    return Done(note, output or {}, details or {})


def retry_after(delay: float, *, note: str = "", memo: dict[str, Any] | None = None,
                details: dict[str, Any] | None = None) -> Retry:
    return Retry(delay, note, memo or {}, details or {})


def failed(reason: str, message: str = "", details: dict[str, Any] | None = None) -> Failed:
    return Failed(reason, message, details or {})


# -- the retry policy ---------------------------------------------------------------------------

def backoff_delay(interval: float, elapsed: float, *, first: float, fraction: float) -> float:
    """How long to wait before looking again at something unchanged for `elapsed` seconds:
    `first` at first, then `fraction` of `elapsed` (a geometric backoff: each wait is that
    fraction longer than the one before), at most `interval`. A change is seen at most `first`
    or `fraction` x its age late, so seconds-long work (the simulated site) is followed
    closely and minutes-long work (real MAAS, BMCs, a node joining) at `interval`."""
    return min(interval, max(first, fraction * elapsed))


@dataclass(frozen=True)
class StepPolicy:
    """A step's overall timeout and the retries of its errors, as data.

    A retryable error (a peer unreachable or answering 5xx) is retried `retries` times with
    exponential backoff (`backoff`, doubling, at most `max_backoff`), and beyond that for as
    long as the peer has been failing less than `outage_window` seconds. One attempt running
    longer than `attempt_timeout` (None: no limit) is stuck (common.engine.stuck).
    """

    timeout: float = 900.0
    retries: int = 3
    backoff: float = 5.0
    max_backoff: float = 300.0
    outage_window: float = 0.0
    attempt_timeout: float | None = None

    def backoff_for(self, failures: int) -> float:
        """Delay before the retry following the `failures`-th failed attempt (1-based)."""
        return float(min(self.max_backoff, self.backoff * (2 ** max(0, failures - 1))))


def next_attempt(policy: StepPolicy, failures: int, failing_since: float,
                 now: float) -> float | None:
    """When to try again after the `failures`-th consecutive failure (1-based) at `now`, the
    peer failing since `failing_since`; None: give up."""
    if failures <= policy.retries or now - failing_since < policy.outage_window:
        return now + policy.backoff_for(failures)
    return None


# -- a step definition -----------------------------------------------------------------------

C = TypeVar("C")  # what a step gets (each engine's own context)


def _default_policy(ctx: object) -> StepPolicy:
    return StepPolicy()


@dataclass(frozen=True)
class StepDef(Generic[C]):
    """One step: `run` does one attempt and returns an Outcome; `policy` gives its timeout
    and retries. `per_node` steps form a chain per target node (Shipyard); `exclusive` names
    what no other running step may hold; `cancel` stops the work the step started elsewhere."""

    name: str
    run: Callable[[C], Outcome]
    policy: Callable[[C], StepPolicy] = _default_policy
    per_node: bool = False
    exclusive: Callable[[C], set[str]] | None = None
    cancel: Callable[[C], None] | None = None
