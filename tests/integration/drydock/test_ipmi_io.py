"""Drydock's IPMI driver keeps answering when pyghmi's process-wide IO thread ends: between two
calls, and while a call waits on it (without the watchdog that call, and the driver's lock
with it, would wait for good)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from pyghmi.ipmi.private import session as ipmisession

from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.ports import OobError
from drydock_api.nodes.design import BmcAccess
from sitesim.bmc.ipmi import PyghmiBmcs
from sitesim.ports import free_port
from tests.integration.sitesim.conftest import wait_for
from tests.support.pyghmi import PASSWORD, USER, Model, end_io_thread, node


@pytest.fixture
def bmc() -> Iterator[BmcAccess]:
    port = free_port(socket.SOCK_DGRAM)
    bmcs = PyghmiBmcs(Model(), [(node("drydock-io"), port)])  # type: ignore[arg-type]
    bmcs.start()
    yield BmcAccess("ipmi", "127.0.0.1", port, USER, PASSWORD)
    bmcs.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_call_after_the_io_thread_ended_is_answered(bmc: BmcAccess) -> None:
    driver = IpmiDriver()
    assert driver.power_state(bmc) == "on"
    ended = end_io_thread()
    assert driver.power_state(bmc) == "on"
    assert ipmisession.iothread is not ended and ipmisession.iothread.is_alive()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_call_waiting_when_the_io_thread_ends_still_ends(bmc: BmcAccess) -> None:
    driver = IpmiDriver()
    silent = BmcAccess("ipmi", "127.0.0.1", free_port(socket.SOCK_DGRAM), USER, PASSWORD)
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(driver.power_state(silent))  # nothing answers: pyghmi retries
        except OobError as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=call, daemon=True)
    waiting.start()
    wait_for(lambda: ipmisession.iothread is not None and ipmisession.ioqueue, timeout=10)
    end_io_thread()
    waiting.join(120)
    assert not waiting.is_alive(), "the call waits for good"
    assert isinstance(outcome[0], OobError)
    assert driver.power_state(bmc) == "on"  # the lock was given back: the next call works
