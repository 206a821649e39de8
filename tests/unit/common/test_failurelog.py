"""A background loop's repeated failure: its first occurrence whole, then a line a minute
while it lasts, a new kind whole again, and its end; a runner whose database is away for
many polls logs one traceback, not one per poll."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from common.failurelog import FailureLog
from common.runner import Runner, RunnerSettings

LOG = logging.getLogger("test.failurelog")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, bool]]:
    return [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records
            if r.name == LOG.name]


def test_the_first_failure_is_logged_whole_then_a_line_a_minute_then_its_end(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    failures = FailureLog(LOG, "Renewing leases", every=60, clock=clock)
    caplog.set_level(logging.INFO, logger=LOG.name)
    for n in range(130):  # one a second
        failures.failed(ConnectionError(f"database away ({n})"))
        clock.now += 1
    assert failures.failing
    failures.ok()
    failures.ok()  # working on: nothing more to say
    assert lines(caplog) == [
        ("WARNING", "Renewing leases failed: database away (0)", True),
        ("WARNING", "Renewing leases still failing: 61 failures in 60 s, the last: "
                    "database away (60)", False),
        ("WARNING", "Renewing leases still failing: 121 failures in 120 s, the last: "
                    "database away (120)", False),
        ("INFO", "Renewing leases works again after 130 failures in 130 s", False)]
    assert not failures.failing


def test_a_new_kind_of_failure_is_logged_whole_at_once_and_without_a_trace_when_quiet(
        caplog: pytest.LogCaptureFixture) -> None:
    failures = FailureLog(LOG, "Sweep", clock=Clock(), quiet=(TimeoutError,))
    caplog.set_level(logging.INFO, logger=LOG.name)
    failures.failed(ConnectionError("refused"))
    failures.failed(ConnectionError("refused"))
    failures.failed(TimeoutError("timed out"))
    assert lines(caplog) == [("WARNING", "Sweep failed: refused", True),
                             ("WARNING", "Sweep failed: timed out", False)]


class AwayThenBack:
    """A lease table whose database is away for the first `away` claims."""

    def __init__(self, away: int) -> None:
        self.away, self.claims = away, 0
        self.back = threading.Event()

    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> list[str]:
        self.claims += 1
        if self.claims <= self.away:
            raise ConnectionError("could not connect to the database")
        self.back.set()
        return []

    def renew_unit(self, unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        return True

    def drop_unit(self, unit_id: str, owner: str) -> None:
        pass


def test_a_runner_whose_database_is_away_logs_one_traceback_and_its_return(
        caplog: pytest.LogCaptureFixture) -> None:
    store = AwayThenBack(away=40)
    runner = Runner(store, lambda unit, hold: None,
                    RunnerSettings(poll_interval=0.005), "me", key=str, name="action")
    caplog.set_level(logging.INFO, logger="common.runner")
    loop = threading.Thread(target=runner.run, daemon=True)
    loop.start()
    assert store.back.wait(10)
    time.sleep(0.05)
    runner.stop()
    loop.join(5)
    said = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records
            if r.name == "common.runner"]
    assert said[0] == ("WARNING", "Polling for actions failed: could not connect to the "
                                  "database", True)
    assert [(level, text.split(" in ")[0]) for level, text, _ in said[1:]] == [
        ("INFO", "Polling for actions works again after 40 failures")]


def test_what_a_runner_renews_beside_its_leases_failing_at_each_heartbeat_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    store = AwayThenBack(away=0)
    calls: list[list[str]] = []

    def renewed(ids: list[str]) -> None:  # e.g. Drydock's failure-domain slots, Drydock away
        calls.append(ids)
        if len(calls) <= 5:
            raise ConnectionError("Drydock unreachable")

    runner = Runner(store, lambda unit, hold: None, RunnerSettings(), "me", key=str,
                    renewed=renewed, name="task")
    caplog.set_level(logging.INFO, logger="common.runner")
    for _ in range(7):
        runner.heartbeat_once()
    said = [(r.levelname, r.getMessage().split(" in ")[0], r.exc_info is not None)
            for r in caplog.records if r.name == "common.runner"]
    assert said == [("WARNING", "Renewing what the tasks hold failed: Drydock unreachable",
                     True),
                    ("INFO", "Renewing what the tasks hold works again after 5 failures",
                     False)]
