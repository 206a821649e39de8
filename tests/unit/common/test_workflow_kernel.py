"""The workflow kernel both engines share: outcomes and the retry policy as a pure function."""

from __future__ import annotations

from common.workflow import Done, Failed, Retry, StepDef, StepPolicy, next_attempt

POLICY = StepPolicy(timeout=60, retries=3, backoff=1.0, max_backoff=5.0, outage_window=0.0)


def test_retries_back_off_exponentially_up_to_the_cap_then_give_up() -> None:
    now = 1000.0
    delays = [next_attempt(POLICY, n, now, now) for n in (1, 2, 3)]
    assert [d - now for d in delays if d is not None] == [1.0, 2.0, 4.0]
    assert next_attempt(POLICY, 4, now, now) is None
    capped = StepPolicy(retries=10, backoff=1.0, max_backoff=5.0)
    assert next_attempt(capped, 6, now, now) == now + 5.0


def test_an_outage_window_keeps_retrying_while_the_peer_fails_less_than_it() -> None:
    policy = StepPolicy(retries=1, backoff=1.0, max_backoff=5.0, outage_window=120.0)
    assert next_attempt(policy, 20, failing_since=0.0, now=119.0) == 124.0
    assert next_attempt(policy, 20, failing_since=0.0, now=120.0) is None


def test_one_set_of_outcomes() -> None:
    assert Failed("Timeout").message == "Timeout"  # the code stands in for a missing message
    assert Failed("Timeout", "took too long").message == "took too long"
    assert Done("released", {"at": 1}).output == {"at": 1}
    assert Retry(5.0, "MAAS status Releasing").memo == {}
    step: StepDef[int] = StepDef("double", lambda n: Done(str(n * 2)))
    assert step.policy(1) == StepPolicy() and step.run(2) == Done("4")
