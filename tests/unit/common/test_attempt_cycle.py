"""The one attempt cycle (common.journal) on an in-memory journal kept as a store keeps rows:
an attempt's state is written before its effect, a crash between begin and end leaves a begun
attempt the next cycle counts, and the judged outcome is kept as done, waiting or failed."""

from __future__ import annotations

from typing import Any

import pytest

from common.engine import Attempts, begin
from common.errors import BadGateway
from common.journal import Judged, Memory, attempt, run_step
from common.workflow import Done, Failed, Outcome, Retry, StepDef, StepPolicy

POLICY = StepPolicy(timeout=15.0, retries=2, backoff=5.0, max_backoff=60.0)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Rows:
    """A journal keeping each step as a row of JSON (as a store would), and what was
    written, in order."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.rows: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []

    def now(self) -> float:
        return self.clock()

    def begun(self, key: str, now: float) -> Attempts:
        row = self.rows.get(key)
        seen = begin(Attempts.load(row["state"]) if row else Attempts.first(now), now)
        self._write(key, "running", seen)
        return seen

    def done(self, key: str, judged: Judged) -> None:
        assert isinstance(judged.outcome, Done)
        self._write(key, "done", judged.state, output=judged.outcome.output)

    def waiting(self, key: str, judged: Judged) -> None:
        self._write(key, "waiting", judged.state, error=judged.error is not None)

    def failed(self, key: str, judged: Judged) -> None:
        assert isinstance(judged.outcome, Failed)
        self._write(key, "failed", judged.state, reason=judged.outcome.reason)

    def _write(self, key: str, status: str, state: Attempts, **more: object) -> None:
        self.rows[key] = {"status": status, "state": state.to_json(), **more}
        self.writes.append((key, status))


class Crash(BaseException):
    """The worker dies in the middle of an attempt (not an error the cycle judges)."""


def step(run: Any, policy: StepPolicy = POLICY) -> StepDef[None]:
    return StepDef("release", run, policy=lambda _ctx: policy)


def test_the_attempt_state_is_written_before_the_effect_and_the_outcome_after() -> None:
    clock = Clock()
    journal = Rows(clock)
    seen_by_effect: list[dict[str, Any]] = []

    def run(_ctx: None) -> Outcome:
        seen_by_effect.append(dict(journal.rows["release"]))
        return Done("released", {"system_id": "abc"})

    judged = attempt(step(run), None, journal, "release")
    assert seen_by_effect[0]["status"] == "running"
    assert seen_by_effect[0]["state"]["attempts"] == 1
    assert journal.writes == [("release", "running"), ("release", "done")]
    assert judged is not None and isinstance(judged.outcome, Done)
    assert journal.rows["release"]["output"] == {"system_id": "abc"}


def test_a_crash_between_begin_and_end_leaves_a_begun_attempt_the_next_cycle_counts() -> None:
    clock = Clock()
    journal = Rows(clock)

    def dies(_ctx: None) -> Outcome:
        raise Crash()

    with pytest.raises(Crash):
        attempt(step(dies), None, journal, "release")
    assert journal.rows["release"]["status"] == "running"  # begun, never ended
    assert journal.rows["release"]["state"]["attempts"] == 1
    clock.t += 30.0  # another worker takes the step over
    counted: list[int] = []

    def run(_ctx: None) -> Outcome:
        counted.append(journal.rows["release"]["state"]["attempts"])
        return Done("released")

    judged = attempt(step(run), None, journal, "release")
    assert counted == [2] and judged is not None and judged.state.attempts == 2
    assert journal.rows["release"]["status"] == "done"


def test_a_retryable_error_waits_with_backoff_then_fails_saying_how_often() -> None:
    clock = Clock()
    journal = Rows(clock)

    def down(_ctx: None) -> Outcome:
        raise BadGateway("MAAS answered 503")

    delays = []
    for _ in range(3):
        judged = attempt(step(down), None, journal, "release")
        assert judged is not None
        if not isinstance(judged.outcome, Retry):
            break
        assert journal.rows["release"]["status"] == "waiting"
        assert journal.rows["release"]["error"] is True
        assert judged.state.next_at == clock() + judged.outcome.delay
        delays.append(judged.outcome.delay)
        clock.t = judged.state.next_at
    assert delays == [5.0, 10.0] and judged is not None
    assert isinstance(judged.outcome, Failed) and judged.outcome.reason == "BadGateway"
    assert judged.outcome.message == "release: MAAS answered 503 (3 tries over 15 s)"
    assert journal.rows["release"]["status"] == "failed"
    assert journal.rows["release"]["state"]["failures"] == 3


def test_a_step_that_fails_is_kept_failed_with_its_reason() -> None:
    journal = Rows(Clock())
    judged = attempt(step(lambda _c: Failed("NotInDesign", "no such node")), None, journal,
                     "release")
    assert judged is not None and judged.outcome == Failed("NotInDesign", "no such node")
    assert journal.rows["release"]["reason"] == "NotInDesign"
    assert journal.writes == [("release", "running"), ("release", "failed")]


def test_a_wait_that_would_end_past_the_steps_timeout_fails_with_timeout() -> None:
    clock = Clock()
    journal = Rows(clock)
    waits = step(lambda _c: Retry(10.0, "still deploying"))
    judged = attempt(waits, None, journal, "release")
    assert judged is not None and isinstance(judged.outcome, Retry)
    assert journal.rows["release"]["status"] == "waiting"
    assert judged.state.next_at is not None
    clock.t = judged.state.next_at
    judged = attempt(waits, None, journal, "release")  # 10 s in, waiting 10 s more: past 15
    assert judged is not None and isinstance(judged.outcome, Failed)
    assert judged.outcome.reason == "Timeout"
    assert judged.outcome.message == "release: timed out after 15s (still deploying)"
    assert journal.rows["release"]["status"] == "failed"
    assert journal.rows["release"]["state"]["attempts"] == 2


def test_a_result_no_longer_counting_keeps_nothing() -> None:
    journal = Rows(Clock())
    judged = attempt(step(lambda _c: Done("late")), None, journal, "release",
                     kept=lambda: False)
    assert judged is None
    assert journal.writes == [("release", "running")]  # begun only, as a crash leaves it


def test_the_memory_journal_and_a_plain_callable() -> None:
    clock = Clock()
    journal = Memory(clock, {})
    judged = attempt(step(lambda _c: Retry(2.0, "on")), None, journal, "power")
    assert judged is not None and journal.states["power"].next_at == clock() + 2.0
    assert run_step(lambda ctx: Done(str(ctx)), 7) == Done("7")

    def bug(_ctx: None) -> Outcome:
        raise KeyError("a bug")

    assert isinstance(run_step(bug, None), KeyError)  # returned to be judged, never raised
