"""What a step returns (done / retry after a delay / failed) and the engine's retry policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Done:
    """The step finished; `output` is kept for later steps, `details` shown to the operator."""

    output: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class RetryAfter:
    """Run the step again after `delay` seconds (e.g. a Drydock task still running).

    `memo` is saved with the step and handed back on the next run (e.g. the task id).
    """

    delay: float
    note: str = ""
    memo: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """The step failed for good; the action fails once nothing else can run."""

    reason: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


Outcome = Done | RetryAfter | Failed


def done(output: dict[str, Any] | None = None, *, details: dict[str, Any] | None = None,
         note: str = "") -> Done:
    return Done(output or {}, details or {}, note)


def retry_after(delay: float, *, note: str = "", memo: dict[str, Any] | None = None,
                details: dict[str, Any] | None = None) -> RetryAfter:
    return RetryAfter(delay, note, memo or {}, details or {})


def failed(reason: str, message: str = "", details: dict[str, Any] | None = None) -> Failed:
    return Failed(reason, message or reason, details or {})


@dataclass(frozen=True)
class StepPolicy:
    """Retries (of errors, with exponential backoff) and the step's overall timeout.

    A retryable error (a peer unreachable or answering 5xx) is retried `retries` times, and
    beyond that for as long as the peer has been failing less than `outage_window` seconds.
    """

    timeout: float = 900.0
    retries: int = 3
    backoff: float = 5.0
    max_backoff: float = 300.0
    outage_window: float = 0.0

    def backoff_for(self, failures: int) -> float:
        """Delay before the retry following the `failures`-th failed attempt (1-based)."""
        return float(min(self.max_backoff, self.backoff * (2 ** max(0, failures - 1))))
