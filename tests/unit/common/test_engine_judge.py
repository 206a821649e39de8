"""The one attempt judge: errors retried or failed by their retry flag and the policy,
the outage window, the overall timeout, and stuck attempts (the attempt timeout)."""

from __future__ import annotations

from common.engine import STUCK, Attempts, begin, judge, stuck
from common.errors import BadGateway, Conflict
from common.workflow import Done, Failed, Retry, StepPolicy

POLICY = StepPolicy(timeout=100.0, retries=2, backoff=5.0, max_backoff=60.0)


def test_a_retryable_error_is_retried_with_backoff_then_fails_saying_tries_and_outage() -> None:
    seen, now = Attempts.first(0.0), 0.0
    delays = []
    for _ in range(3):
        seen = begin(seen, now)
        outcome, seen = judge("release", POLICY, seen, BadGateway("MAAS answered 503"), now)
        if isinstance(outcome, Failed):
            break
        assert isinstance(outcome, Retry) and seen.next_at == now + outcome.delay
        delays.append(outcome.delay)
        now = seen.next_at
    assert delays == [5.0, 10.0]
    assert isinstance(outcome, Failed) and outcome.reason == "BadGateway"
    assert outcome.message == "release: MAAS answered 503 (3 tries over 15 s)"
    assert seen.failures == 3 and seen.failing_since == 0.0


def test_the_outage_window_keeps_retrying_past_the_retries() -> None:
    policy = StepPolicy(retries=0, backoff=1.0, max_backoff=1.0, outage_window=30.0)
    seen, now = Attempts.first(0.0), 0.0
    outcomes = []
    while now < 40:
        outcome, seen = judge("s", policy, begin(seen, now), BadGateway("down"), now)
        outcomes.append(outcome)
        if isinstance(outcome, Failed):
            break
        now = seen.next_at or now
    assert all(isinstance(o, Retry) for o in outcomes[:-1]) and len(outcomes) == 31
    assert isinstance(outcomes[-1], Failed) and "over 30 s" in outcomes[-1].message
    done, after = judge("s", policy, begin(seen, now), Done(), now)  # back: the outage ends
    assert isinstance(done, Done) and after.failures == 0 and after.failing_since is None


def test_an_error_that_says_no_retry_fails_at_once() -> None:
    outcome, seen = judge("s", POLICY, begin(Attempts.first(0.0), 0.0),
                          Conflict("taken", reason="Abandoned"), 0.0)
    assert isinstance(outcome, Failed) and outcome.reason == "Abandoned"
    assert outcome.message == "s: taken" and seen.failures == 1


def test_a_bug_fails_the_step_unless_unexpected_errors_are_retried() -> None:
    bug = KeyError("x")
    failed, _ = judge("s", POLICY, Attempts.first(0.0), bug, 0.0)
    assert isinstance(failed, Failed) and failed.reason == "InternalError"
    again, _ = judge("s", POLICY, Attempts.first(0.0), bug, 0.0, retry_unexpected=True)
    assert isinstance(again, Retry)
    bad, _ = judge("s", POLICY, Attempts.first(0.0), ValueError("no"), 0.0,
                   retry_unexpected=True)
    assert isinstance(bad, Failed) and bad.reason == "InvalidInput"


def test_a_wait_ending_past_the_overall_timeout_fails_with_timeout() -> None:
    seen = begin(Attempts.first(0.0), 90.0)
    outcome, _ = judge("s", POLICY, seen, Retry(5.0, "still erasing"), 90.0)
    assert isinstance(outcome, Retry)
    outcome, _ = judge("s", POLICY, seen, Retry(15.0, "still erasing"), 90.0)
    assert isinstance(outcome, Failed) and outcome.reason == "Timeout"
    assert outcome.message == "s: timed out after 100s (still erasing)"


def test_a_late_attempt_after_a_takeover_gets_its_whole_wait() -> None:
    seen = Attempts(started=0.0, next_at=50.0)
    later = begin(seen, 200.0)  # the unit was taken over 150 s after the attempt was due
    assert later.started == 150.0 and later.attempts == 1 and later.next_at is None


def test_an_attempt_past_its_attempt_timeout_is_stuck() -> None:
    policy = StepPolicy(attempt_timeout=60.0)
    assert stuck("wipe", "n1", policy, 100.0, 160.0) is None
    failed = stuck("wipe", "n1", policy, 100.0, 161.0)
    assert failed is not None and failed.reason == STUCK
    assert failed.message.startswith("wipe on n1: an attempt has run 61 s")
    assert stuck("wipe", "n1", StepPolicy(), 0.0, 1e9) is None  # no attempt timeout


def test_attempts_round_trip_through_json() -> None:
    seen = Attempts(started=1.0, attempts=2, failures=1, failing_since=0.5, note="n",
                    noted_at=1.0, next_at=3.0)
    assert Attempts.load(seen.to_json()) == seen
