"""MAAS and BMC polls: soon after a step asks for something, backing off to the interval."""

from __future__ import annotations

import pytest

from common.journal import Memory
from common.workflow import Done, Outcome, Retry
from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.oob_fake import FakeOob
from drydock_api.nodes.design import NodeDef
from drydock_api.tasks.context import NodeContext, NodeStep, Ports, StepSettings, node_step
from drydock_api.tasks.engine import Attempts, StepEngine, poll_delay
from drydock_api.tasks.waits import ExpectedWaits, poll_after
from tests.unit.drydock.conftest import FakeClock, SiteFactory

SETTINGS = StepSettings(maas_poll=5.0, first_poll=0.1, poll_backoff=0.1, release_timeout=3600)


def attempt(engine: StepEngine, step: NodeStep, ctx: NodeContext,
            seen: Attempts) -> tuple[Outcome, Attempts]:
    """Run the step once after `seen` through Drydock's attempt cycle, its state held in
    memory: the outcome (a Retry's delay follows the poll schedule) and the next state."""
    judged = engine.cycle(step, ctx, Memory(ctx.clock, {step.name: seen}), step.name)
    assert judged is not None
    return judged.outcome, judged.state


def run(step_fn: object, clock: FakeClock,
        engine: StepEngine | None = None) -> tuple[Outcome, list[float]]:
    """Run one step attempt by attempt on a fake clock, as the orchestrator schedules it
    (waiting until each saved next attempt time), through `engine` (default: one that
    remembers no waits); the outcome and every wait."""
    waits: list[float] = []
    node = NodeDef("n1", None, (), {}, None, None, None, None, (), None)
    ctx = NodeContext(node=node, options={}, ports=Ports.of(FakeMaas(), FakeOob()),
                      settings=SETTINGS, request=None, clock=clock)  # type: ignore[arg-type]
    step = node_step("release", step_fn, lambda s: s.release_timeout)  # type: ignore[arg-type]
    engine, seen = engine or StepEngine(), Attempts.first(clock())
    while True:
        outcome, seen = attempt(engine, step, ctx, seen)
        if not isinstance(outcome, Retry):
            return outcome, waits
        assert seen.next_at is not None
        waits.append(round(seen.next_at - clock(), 6))
        clock.advance(seen.next_at - clock())


def test_polls_wait_first_poll_then_a_fraction_of_the_time_unchanged_up_to_the_interval() -> None:
    assert poll_delay(5.0, 0.0, SETTINGS) == 0.1
    assert poll_delay(5.0, 0.5, SETTINGS) == 0.1
    assert poll_delay(5.0, 3.0, SETTINGS) == pytest.approx(0.3)
    assert poll_delay(5.0, 49.0, SETTINGS) == pytest.approx(4.9)
    assert poll_delay(5.0, 600.0, SETTINGS) == 5.0
    assert poll_delay(0.0, 10.0, SETTINGS) == 0.0  # a long-polling step comes back at once
    assert poll_delay(0.01, 0.0, SETTINGS) == 0.01  # a shorter interval wins


def test_seconds_long_work_is_seen_within_a_tenth_of_a_second() -> None:
    clock = FakeClock()
    done_at = clock() + 2.0  # the machine is released two seconds after the request

    def release(ctx: NodeContext) -> Outcome:
        if ctx.clock() >= done_at:
            return Done("released")
        return Retry(ctx.settings.maas_poll, "MAAS status Releasing")

    outcome, waits = run(release, clock)
    assert isinstance(outcome, Done)
    assert clock() - done_at < 0.2 + 1e-9
    assert max(waits) <= 0.2


def test_minutes_long_work_backs_off_to_the_interval() -> None:
    clock = FakeClock()
    start = clock()

    def release(ctx: NodeContext) -> Outcome:
        if ctx.clock() - start >= 600:
            return Done("released")
        return Retry(ctx.settings.maas_poll, "MAAS status Disk erasing")

    _, waits = run(release, clock)
    assert waits[:10] == [0.1] * 10
    assert all(later >= earlier for earlier, later in zip(waits, waits[1:], strict=False))
    assert waits[-1] == 5.0
    # ten minutes of erasing cost fewer polls than 5 s polling from the start plus 60
    assert len(waits) < 600 / 5 + 60


def test_a_new_situation_is_polled_soon_again() -> None:
    clock = FakeClock()
    start = clock()

    def release(ctx: NodeContext) -> Outcome:
        elapsed = ctx.clock() - start
        if elapsed >= 130:
            return Done("released")
        status = "Releasing" if elapsed < 120 else "Disk erasing"
        return Retry(ctx.settings.maas_poll, f"MAAS status {status}")

    _, waits = run(release, clock)
    changed = next(i for i, w in enumerate(waits) if i and w < waits[i - 1])
    assert waits[changed - 1] == 5.0
    assert waits[changed] == 0.1


def test_the_time_no_worker_ran_the_step_does_not_count_against_its_timeout() -> None:
    """A worker dies after its request; the one that takes over a minute later sends the next
    request and still gets the step's time to see it done, instead of failing at once."""
    clock = FakeClock()
    node = NodeDef("n1", None, (), {}, None, None, None, None, (), None)
    ctx = NodeContext(node=node, options={}, ports=Ports.of(FakeMaas(), FakeOob()),
                      settings=SETTINGS, request=None, clock=clock)  # type: ignore[arg-type]
    asked: list[float] = []

    def power(ctx: NodeContext) -> Outcome:
        if len(asked) == 2 and ctx.clock() - asked[-1] >= 1.0:  # the first was lost
            return Done("off")
        if len(asked) < 2:
            asked.append(ctx.clock())
        return Retry(0.5, f"request {len(asked)} sent")

    step = node_step("power_off", power, lambda s: 10.0)  # type: ignore[arg-type]
    engine, seen = StepEngine(), Attempts.first(clock())
    outcome, seen = attempt(engine, step, ctx, seen)
    assert isinstance(outcome, Retry) and seen.next_at is not None
    clock.advance(60.0)  # the worker died; its successor runs the step a minute late
    outcome, seen = attempt(engine, step, ctx, seen)
    assert isinstance(outcome, Retry), outcome
    while isinstance(outcome, Retry):
        assert seen.next_at is not None
        clock.advance(seen.next_at - clock())
        outcome, seen = attempt(engine, step, ctx, seen)
    assert isinstance(outcome, Done)

    never = node_step("power_off", lambda c: Retry(0.5, "on"), lambda s: 10.0)  # type: ignore
    outcome, seen = attempt(engine, never, ctx, Attempts.first(clock()))
    while isinstance(outcome, Retry):  # on time, the timeout still holds
        assert seen.next_at is not None
        clock.advance(seen.next_at - clock())
        outcome, seen = attempt(engine, never, ctx, seen)
    assert "timed out after 10s" in outcome.message


def releasing(clock: FakeClock, seconds: float, status: str = "Releasing") -> object:
    """A release step whose machine is Ready `seconds` after its first attempt."""
    start: list[float] = []

    def release(ctx: NodeContext) -> Outcome:
        if not start:
            start.append(ctx.clock())
        if ctx.clock() - start[0] >= seconds:
            return Done("released")
        return Retry(ctx.settings.maas_poll, f"MAAS status {status}")
    return release


def test_a_wait_seen_end_before_is_polled_around_when_it_ended() -> None:
    assert poll_after(5.0, 0.0, first=0.1, fraction=0.1) == 0.1  # nothing seen: as before
    assert poll_after(5.0, 0.0, first=0.1, fraction=0.1, expected=2.0) == pytest.approx(1.6)
    assert poll_after(1.0, 0.0, first=0.1, fraction=0.1, expected=2.0) == 1.0  # the interval
    assert poll_after(5.0, 1.6, first=0.1, fraction=0.1, expected=2.0) == pytest.approx(0.1)
    assert poll_after(5.0, 1.6, first=0.1, fraction=0.1, expected=0.4) == pytest.approx(0.16)
    assert poll_after(5.0, 0.35, first=0.1, fraction=0.1, expected=0.4) == 0.025
    assert poll_after(5.0, 2.5, first=0.1, fraction=0.1, expected=2.0) == pytest.approx(0.25)
    # minutes-long work: only the first seconds' polls go; the interval caps every wait
    assert poll_after(5.0, 0.0, first=0.1, fraction=0.1, expected=600.0) == 5.0
    assert poll_after(5.0, 500.0, first=0.1, fraction=0.1, expected=600.0) == 5.0
    assert poll_after(0.0, 0.0, first=0.1, fraction=0.1, expected=2.0) == 0.0


def test_the_same_wait_again_costs_fewer_polls_and_is_seen_sooner() -> None:
    clock, engine = FakeClock(), StepEngine(ExpectedWaits())
    first_at = clock()
    outcome, first = run(releasing(clock, 2.0), clock, engine)
    assert isinstance(outcome, Done)
    assert len(first) == 18 and clock() - first_at - 2.0 == pytest.approx(0.144, abs=0.01)

    again_at = clock()
    outcome, again = run(releasing(clock, 2.0), clock, engine)
    assert isinstance(outcome, Done)
    assert len(again) <= 5, again
    assert again[0] == pytest.approx(0.8 * 2.144, abs=0.01)  # nothing looked for before
    assert clock() - again_at - 2.0 <= 0.05

    # a Retry of another status, or another step's, is polled from its start as before
    _, other = run(releasing(clock, 2.0, status="Disk erasing"), clock, engine)
    assert other[:10] == [0.1] * 10


def test_work_quicker_than_lately_is_seen_within_the_interval_then_sooner_each_time() -> None:
    clock, engine = FakeClock(), StepEngine(ExpectedWaits())
    run(releasing(clock, 20.0), clock, engine)
    late: list[float] = []
    for _ in range(3):
        started = clock()
        outcome, waits = run(releasing(clock, 0.5), clock, engine)
        assert isinstance(outcome, Done)
        assert max(waits) <= SETTINGS.maas_poll  # the interval caps every wait
        late.append(clock() - started - 0.5)
    # seen at 5 s (the interval), then at 80 % of what the last one took
    assert late == pytest.approx([4.5, 3.5, 2.7], abs=0.01)


def test_a_failed_step_or_an_error_teaches_nothing() -> None:
    clock, engine = FakeClock(), StepEngine(ExpectedWaits())
    calls: list[int] = []

    def fails(ctx: NodeContext) -> Outcome:
        calls.append(1)
        if len(calls) > 3:
            raise ValueError("MAAS refused the release")
        return Retry(ctx.settings.maas_poll, "MAAS status Releasing")

    outcome, _ = run(fails, clock, engine)
    assert not isinstance(outcome, Done | Retry)
    assert engine.waits is not None
    assert engine.waits.expected("release", "MAAS status Releasing") is None


def test_the_service_remembers_waits_unless_configured_not_to(make_site: SiteFactory) -> None:
    assert isinstance(make_site(["n1"]).runtime.orchestrator.engine.waits, ExpectedWaits)
    off = make_site(["n1"], steps={"expected_waits": False})
    assert off.runtime.orchestrator.engine.waits is None
