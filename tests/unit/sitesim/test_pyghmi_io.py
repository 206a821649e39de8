"""pyghmi's IO thread is replaced once when it has ended, never while it runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pyghmi.ipmi.private import session as ipmisession

from sitesim.bmc import pyghmi_io


class Started(threading.Thread):
    """Stands for pyghmi's IO worker: records that it was started, then ends."""

    count = 0

    def run(self) -> None:
        Started.count += 1


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> type[Started]:
    Started.count = 0
    monkeypatch.setattr(ipmisession, "define_worker", lambda: Started)
    return Started


def test_an_ended_io_thread_is_replaced_once(monkeypatch: pytest.MonkeyPatch,
                                            fake_worker: Any, caplog: Any) -> None:
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    monkeypatch.setattr(ipmisession, "iothread", ended)
    assert pyghmi_io.revive_io_thread()
    replacement = ipmisession.iothread
    assert isinstance(replacement, Started) and replacement.daemon
    replacement.join(5)
    assert fake_worker.count == 1 and "IO thread had stopped" in caplog.text


def test_a_running_or_absent_io_thread_is_left_alone(monkeypatch: pytest.MonkeyPatch,
                                                    fake_worker: Any) -> None:
    release = threading.Event()
    running = threading.Thread(target=release.wait, daemon=True)
    running.start()
    try:
        monkeypatch.setattr(ipmisession, "iothread", running)
        assert not pyghmi_io.revive_io_thread() and ipmisession.iothread is running
        monkeypatch.setattr(ipmisession, "iothread", None)  # pyghmi starts its own at login
        assert not pyghmi_io.revive_io_thread() and ipmisession.iothread is None
    finally:
        release.set()
    assert fake_worker.count == 0


def test_the_watchdog_is_started_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    hold = threading.Event()

    def run() -> None:
        runs.append(threading.current_thread().name)
        hold.wait(5)

    monkeypatch.setattr(pyghmi_io.IoWatchdog, "_thread", None)
    monkeypatch.setattr(pyghmi_io.IoWatchdog, "_run", staticmethod(run))
    try:
        pyghmi_io.IoWatchdog.ensure()
        pyghmi_io.IoWatchdog.ensure()
    finally:
        hold.set()
    thread = pyghmi_io.IoWatchdog._thread
    assert thread is not None
    thread.join(5)
    assert runs == ["pyghmi-io-watchdog"]
