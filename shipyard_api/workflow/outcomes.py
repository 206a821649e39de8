"""Shipyard's side of the one engine's attempt cycle (common.journal): `StepRecorder` is the
journal of one action's steps on the ActionStore (save_step): an attempt's begin is saved as the
step running (its attempt counted, before its effect), and its judged outcome as the step done,
waiting (with its next attempt and why) or failed, each in the step's log."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from common.engine import Attempts, ErrorView, begin, view_error
from common.errors import BerthError
from common.journal import Judged, Result, settle
from common.jsontypes import JSONObject
from common.workflow import Done, Failed, Outcome, Retry, StepPolicy
from shipyard_api.workflow.models import StepNote, StepRow
from shipyard_api.workflow.states import StepState
from shipyard_api.workflow.store import ActionStore

LOG = logging.getLogger(__name__)
S = StepState
FAILING_SINCE = "failing_since"  # memo key: when the step's peer started failing


class StepAttempt(NamedTuple):
    """What the journal knows an attempt by: the step's row as the turn read it, and the
    memo it starts with (the exclusive keys it holds)."""

    step: StepRow
    memo: JSONObject


class StepRecorder:
    """The journal of the steps of one action for the worker holding it (`owner`), on the
    ActionStore (common.journal.Journal[StepAttempt]). `cap` bounds a poll's delay, `ended`
    is told a step's end, `cancel` asks the peers to stop a step's remote work (its wait
    ended past the step's timeout)."""

    def __init__(self, store: ActionStore, owner: str, action_id: str, *,
                 clock: Callable[[], float], cap: Callable[[float], float],
                 ended: Callable[[StepRow, StepState, float], None],
                 cancel: Callable[[StepRow], None]) -> None:
        self.store, self.owner, self.action_id = store, owner, action_id
        self._clock, self._cap, self._ended, self._cancel = clock, cap, ended, cancel

    def step(self, sid: str) -> StepRow:
        return self.store.step(self.action_id, sid)

    def now(self) -> float:
        return self._clock()

    def begun(self, key: StepAttempt, now: float) -> Attempts:
        step = key.step
        self.store.save_step(self.action_id, self.owner, step.step_id, S.RUNNING,
                             attempts=step.attempts + 1, memo=key.memo,
                             started_at=step.started_at if step.started_at else now)
        return begin(_attempts(step, now), now)

    def record(self, key: StepAttempt, policy: StepPolicy, seen: Attempts,
               result: Result) -> Judged:
        """Judge what the attempt begun as `seen` gave (Shipyard's poll cap, a failure's
        cause in its own words, an unexpected exception retried) and keep it."""
        LOG.log(logging.DEBUG if isinstance(result, Retry) else logging.INFO,
                "Action %s step %s: %s", self.action_id, key.step.step_id, _describe(result))
        return settle(self, key, key.step.step_id, policy, seen, result, retry_unexpected=True,
                      poll=lambda r, _s, _n: self._cap(r.delay), describe=_cause)

    def done(self, key: StepAttempt, judged: Judged) -> None:
        outcome, now, step = judged.outcome, judged.at, self.step(key.step.step_id)
        assert isinstance(outcome, Done)
        notes = ([*step.notes, note(now, outcome.message, step)] if outcome.message
                 else step.notes)
        self.store.save_step(self.action_id, self.owner, step.step_id, S.SUCCESS, ended_at=now,
                             output=outcome.output, details=outcome.details, notes=notes,
                             next_attempt_at=None)
        self._ended(step, S.SUCCESS, now)

    def waiting(self, key: StepAttempt, judged: Judged) -> None:
        outcome, now, step = judged.outcome, judged.at, self.step(key.step.step_id)
        assert isinstance(outcome, Retry)
        if judged.error is not None:
            self._record_error(step, judged.error, outcome, judged.state, now)
            return
        notes = ([*step.notes, note(now, outcome.note, step)][-50:] if outcome.note
                 else step.notes)
        memo = {k: v for k, v in {**(step.memo or {}), **outcome.memo}.items()
                if k != FAILING_SINCE}
        self.store.save_step(self.action_id, self.owner, step.step_id, S.WAITING, notes=notes,
                             next_attempt_at=judged.state.next_at, memo=memo,
                             details=outcome.details or step.details)

    def failed(self, key: StepAttempt, judged: Judged) -> None:
        outcome, now, step = judged.outcome, judged.at, self.step(key.step.step_id)
        assert isinstance(outcome, Failed)
        if judged.error is not None:
            self._record_error(step, judged.error, outcome, judged.state, now)
            return
        if outcome.reason == "Timeout":  # the wait would end past the step's timeout
            self._cancel(step)
        self.fail(step, outcome, now)

    def fail(self, step: StepRow, outcome: Failed, now: float) -> None:
        self.store.save_step(self.action_id, self.owner, step.step_id, S.FAILED, ended_at=now,
                             reason=outcome.reason,
                             details={**outcome.details, "message": outcome.message},
                             notes=[*step.notes, note(now, f"{outcome.reason}: "
                                                           f"{outcome.message}", step)])
        step.state = S.FAILED.value
        self._ended(step, S.FAILED, now)

    def _record_error(self, step: StepRow, exc: BaseException, outcome: Outcome,
                      after: Attempts, now: float) -> None:
        """An attempt raised: judged retried (waiting, its failures and since when kept) or
        failed; the step's log says which attempt failed and why."""
        error = view_error(exc, retry_unexpected=True)
        details: JSONObject = (exc.to_status() if isinstance(exc, BerthError)
                               else {"error": str(exc)})
        memo: JSONObject = {**(step.memo or {}), FAILING_SINCE: after.failing_since}
        outage = now - (after.failing_since or now)
        text = f"Attempt {step.attempts} failed: {error.reason}: {exc}"
        if isinstance(outcome, Retry):
            text += f"; retrying in {outcome.delay:g} s" + (
                f" (failing for {outage:.0f} s)" if outage else "")
            self.store.save_step(self.action_id, self.owner, step.step_id, S.WAITING,
                                 failures=after.failures, details=details, memo=memo,
                                 next_attempt_at=after.next_at,
                                 notes=[*step.notes, note(now, text, step)][-50:])
            return
        assert isinstance(outcome, Failed)
        self.store.save_step(self.action_id, self.owner, step.step_id, S.FAILED,
                             failures=after.failures,
                             details={**details, "message": outcome.message},
                             reason=outcome.reason, ended_at=now,
                             notes=[*step.notes, note(now, text, step)][-50:])
        self._ended(step, S.FAILED, now)


def note(now: float, message: str, step: StepRow) -> StepNote:
    """A line of the step's log; `try` counts the step's failed attempts before it plus one
    (a step that waits and polls again stays in the same try, as a rescheduled task does)."""
    return {"at": now, "message": message, "try": step.failures + 1}


def failure_text(step: StepRow) -> str:
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
