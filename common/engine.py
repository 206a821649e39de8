"""The attempt judge of the one engine: from a step's persisted attempt state, its policy and
what one attempt gave (an outcome or an exception), the outcome to save and the new state.
Shipyard's steps, Drydock's node steps and Promenade's decommission phases are judged here
alike (through the attempt cycle of common.journal): errors retried or failed by their retry
flag and the policy's retries and outage window, the overall timeout, and stuck attempts
(running past the policy's attempt timeout)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace

from common.errors import BerthError
from common.jsontypes import JSON, JSONObject
from common.workflow import Failed, Outcome, Retry, StepPolicy, next_attempt

LOG = logging.getLogger(__name__)
STUCK = "StepStuck"  # the reason of a step failed because an attempt never returned


@dataclass(frozen=True)
class Attempts:
    """Where a step stands between attempts, saved with the step: when it started, attempts
    made, consecutive failed attempts (errors) and since when, the situation its last answer
    described (`note`) and since when, and when to run the next attempt."""

    started: float
    attempts: int = 0
    failures: int = 0
    failing_since: float | None = None
    note: str = ""
    noted_at: float = 0.0
    next_at: float | None = None

    @classmethod
    def first(cls, now: float) -> Attempts:
        return cls(started=now, noted_at=now)

    @classmethod
    def load(cls, data: Mapping[str, JSON]) -> Attempts:
        def num(key: str, default: float | None) -> float | None:
            value = data.get(key, default)
            return float(value) if isinstance(value, int | float) else default

        return cls(started=num("started", 0.0) or 0.0,
                   attempts=int(num("attempts", 0) or 0), failures=int(num("failures", 0) or 0),
                   failing_since=num("failing_since", None), note=str(data.get("note") or ""),
                   noted_at=num("noted_at", 0.0) or 0.0, next_at=num("next_at", None))

    def to_json(self) -> JSONObject:
        return dict(asdict(self))


def late(seen: Attempts, now: float) -> Attempts:
    """The step's clock moved on by how late this attempt is (its worker died and the unit
    was taken over after the lease, or the workers were busy): a step's timeout counts the
    time it was given, so a request made by the worker that takes over still gets its wait."""
    if seen.next_at is None or now <= seen.next_at:
        return seen
    return replace(seen, started=seen.started + now - seen.next_at)


def begin(seen: Attempts, now: float) -> Attempts:
    """The state as an attempt starts (one more attempt, none scheduled)."""
    return replace(late(seen, now), attempts=seen.attempts + 1, next_at=None)


@dataclass(frozen=True)
class ErrorView:
    """What an attempt's exception means for the step."""

    reason: str
    message: str
    retry: bool
    details: JSONObject


def view_error(exc: BaseException, *, retry_unexpected: bool) -> ErrorView:
    """A BerthError says itself whether to retry it (a driver error retries only when
    transient); a ValueError is bad input, never retried; any other exception is a bug
    (InternalError) or, with `retry_unexpected`, a peer failing in a way not mapped yet."""
    if isinstance(exc, BerthError):
        return ErrorView(exc.instance_reason, exc.message, exc.instance_retry,
                         dict(exc.details or {}))
    if isinstance(exc, ValueError):
        return ErrorView("InvalidInput", str(exc), False, {})
    if retry_unexpected:
        return ErrorView(type(exc).__name__, str(exc), True, {"error": str(exc)})
    return ErrorView("InternalError", f"internal error: {type(exc).__name__}: {exc}", False, {})


def tries_text(failures: int, outage: float) -> str:
    return f"{failures} tries" + (f" over {outage:.0f} s" if outage >= 1 else "")


Describe = Callable[[str, ErrorView, int, float], str]  # name, error, failures, outage


def describe_failure(name: str, error: ErrorView, failures: int, outage: float) -> str:
    """`<step>: <message>`, with ` (<n> tries[ over <s> s])` when it was tried again."""
    if not error.retry and failures <= 1:
        return f"{name}: {error.message}"
    return f"{name}: {error.message} ({tries_text(failures, outage)})"


def judge(name: str, policy: StepPolicy, seen: Attempts, result: Outcome | BaseException,
          now: float, *, poll: Callable[[Retry, Attempts, float], float] | None = None,
          retry_unexpected: bool = False,
          describe: Describe = describe_failure) -> tuple[Outcome, Attempts]:
    """The outcome to save for an attempt of step `name` begun from `seen` (see `begin`), and
    the state to save with it. An error is retried at `next_attempt` (its backoff, then the
    outage window) or fails the step (`describe` saying how often and how long it failed);
    a Retry's delay is `poll(outcome, state, now)` (the step's poll schedule) or its own, and
    fails the step with Timeout when the wait would end past the policy's timeout."""
    if isinstance(result, BaseException):
        return _error(name, policy, seen, result, now, retry_unexpected, describe)
    seen = replace(seen, failures=0, failing_since=None)  # the outage, if any, is over
    if not isinstance(result, Retry):
        return result, seen
    if result.note != seen.note:  # a request made or a new status: look again soon
        seen = replace(seen, note=result.note, noted_at=now)
    delay = poll(result, seen, now) if poll is not None else result.delay
    if now - seen.started + delay > policy.timeout:
        return Failed("Timeout", f"{name}: timed out after {policy.timeout:g}s "
                                 f"({result.note})", {"timeout": policy.timeout}), seen
    return replace(result, delay=delay), replace(seen, next_at=now + delay)


def _error(name: str, policy: StepPolicy, seen: Attempts, exc: BaseException, now: float,
           retry_unexpected: bool, describe: Describe) -> tuple[Outcome, Attempts]:
    error = view_error(exc, retry_unexpected=retry_unexpected)
    if not isinstance(exc, BerthError | ValueError):
        LOG.error("Step %s raised", name, exc_info=exc)
    since = seen.failing_since if seen.failing_since is not None else now
    seen = replace(seen, failures=seen.failures + 1, failing_since=since)
    due = next_attempt(policy, seen.failures, since, now) if error.retry else None
    if due is not None:
        return (Retry(due - now, f"{name}: {error.message}", details=error.details),
                replace(seen, next_at=due))
    outage = now - since
    details: JSONObject = {**error.details, "tries": seen.failures, "outage": round(outage, 3)}
    return Failed(error.reason, describe(name, error, seen.failures, outage), details), seen


def stuck(name: str, where: str, policy: StepPolicy, attempt_started: float,
          now: float) -> Failed | None:
    """A StepStuck failure when the attempt begun at `attempt_started` has run past the
    policy's attempt timeout (its thread cannot be stopped: its late result is discarded and
    the step is not run again automatically); None while it may still run."""
    limit = policy.attempt_timeout
    if limit is None or now - attempt_started <= limit:
        return None
    ran = now - attempt_started
    return Failed(STUCK, f"{name} on {where}: an attempt has run {ran:.0f} s, past its "
                         f"attempt timeout of {limit:g} s; its worker is alive, the attempt "
                         f"never returned; the step is not retried automatically",
                  {"attempt_seconds": round(ran, 3), "attempt_timeout": limit})
