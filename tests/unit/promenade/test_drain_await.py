"""The drain's wait for evicted pods to leave, on a fake clock: sliced so a cancellation is
seen between slices, never spinning when the pod watch answers early, and ending at its
deadline with each pod still present named."""

from __future__ import annotations

import pytest

from promenade_api.kube.drain import WAIT_SLICE, Drainer, DrainSettings
from promenade_api.kube.model import Pod


class Clock:
    def __init__(self) -> None:
        self.now, self.slept = 50.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Kube:
    """wait_pods_gone answers at once (a watch that ended early), after `spend` seconds."""

    def __init__(self, clock: Clock, leaving: list[set[str]], spend: float = 0.0) -> None:
        self.clock, self.leaving, self.spend, self.pieces = clock, leaving, spend, []

    def wait_pods_gone(self, node: str, uids: set[str], timeout: float) -> set[str]:
        self.pieces.append(timeout)
        self.clock.now += min(self.spend, timeout)
        gone = self.leaving.pop(0) if self.leaving else set()
        return set(uids) - gone


PODS = [Pod("web", "a", "uid-a", node="n1"), Pod("web", "b", "uid-b", node="n1")]


def test_early_answers_wait_out_the_slice_and_the_wait_ends_when_the_pods_are_gone() -> None:
    clock = Clock()
    kube = Kube(clock, [set(), {"uid-a"}, {"uid-b"}], spend=0.25)
    failures: dict[str, str] = {}
    Drainer(kube, DrainSettings(), clock=clock, sleep=clock.sleep)._await(  # type: ignore[arg-type]
        "n1", PODS, clock() + 30, failures)
    assert failures == {}
    assert clock.slept == [WAIT_SLICE - 0.25] * 2  # the rest of each slice, no spinning
    assert kube.pieces == [WAIT_SLICE] * 3


def test_pods_still_present_at_the_deadline_are_named() -> None:
    clock = Clock()
    kube = Kube(clock, [{"uid-a"}])
    failures: dict[str, str] = {}
    Drainer(kube, DrainSettings(), clock=clock, sleep=clock.sleep)._await(  # type: ignore[arg-type]
        "n1", PODS, clock() + 2.5, failures)
    assert clock.now == 52.5 and clock.slept == [1.0, 1.0, 0.5]  # the last slice is cut
    assert kube.pieces == [1.0, 1.0, 0.5, 0.0]
    assert failures == {"web/b": "web/b: still present on n1 at the timeout"}


def test_a_cancellation_is_seen_between_two_slices() -> None:
    clock = Clock()

    class Cancelled(Exception):
        pass

    def check() -> None:
        if clock() >= 51.0:
            raise Cancelled

    drainer = Drainer(Kube(clock, []), DrainSettings(), clock=clock,  # type: ignore[arg-type]
                      sleep=clock.sleep, check=check)
    with pytest.raises(Cancelled):
        drainer._await("n1", PODS, clock() + 30, {})
    assert clock.now == 51.0
