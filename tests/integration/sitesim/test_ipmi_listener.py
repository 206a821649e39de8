"""The process-wide IPMI listener of the simulated pyghmi BMCs keeps every BMC answering when one
request fails, when pyghmi's IO thread ends, and while other BMCs are stopped under traffic."""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time

import pytest
from pyghmi.ipmi.private import session as ipmisession

from sitesim.bmc.ipmi import PyghmiBmcs
from sitesim.ports import free_port
from tests.integration.sitesim.conftest import wait_for
from tests.support.pyghmi import PASSWORD, USER, Model, end_io_thread, node


def power_status(port: int, retries: int = 1) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p",
                           str(port), "-U", USER, "-P", PASSWORD, "-R", str(retries), "-N", "1",
                           "power", "status"], capture_output=True, text=True, timeout=60)


def answers(port: int) -> bool:
    return "Chassis Power is on" in power_status(port).stdout


def rmcp_plus(payload_type: int, payload: bytes) -> bytes:
    """An RMCP+ packet outside a session (RMCP header, auth type 6, ids 0, length)."""
    return bytes([6, 0, 0xFF, 7, 6, payload_type]) + bytes(8) + struct.pack("<H", len(payload)) \
        + payload


@pytest.fixture
def bmc() -> tuple[Model, int]:
    model, port = Model(), free_port(socket.SOCK_DGRAM)
    bmcs = PyghmiBmcs(model, [(node("listener"), port)])  # type: ignore[arg-type]
    bmcs.start()
    yield model, port
    bmcs.stop()


def test_a_request_pyghmi_cannot_handle_is_logged_and_the_bmc_answers_the_next(bmc, caplog):
    _, port = bmc
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.settimeout(10)
        # Open Session asking for RAKP-HMAC-SHA256 (cipher suite 17): refused with 0x11 ...
        client.sendto(rmcp_plus(0x10, bytes([1, 4, 0, 0]) + b"\x11\x22\x33\x44" + bytes(
            [0, 0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 8, 1, 0, 0, 0, 2, 0, 0, 8, 1, 0, 0, 0])),
            ("127.0.0.1", port))
        assert client.recvfrom(100)[0][17] == 0x11
        # ... then RAKP message 1 on the refused session anyway: pyghmi's session code raises
        client.sendto(rmcp_plus(0x12, bytes(24) + bytes([0x14, 0, 0, len(USER)])
                                + USER.encode()), ("127.0.0.1", port))
    assert wait_for(lambda: answers(port))
    assert "an IPMI request failed" in caplog.text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_ended_io_thread_is_replaced(bmc, caplog):
    _, port = bmc
    before = end_io_thread()
    assert wait_for(lambda: answers(port))
    assert ipmisession.iothread is not before and ipmisession.iothread.is_alive()
    assert "IO thread had stopped" in caplog.text


def test_a_bmc_stopped_while_the_io_thread_reads_it_leaves_the_others_answering(
        bmc, monkeypatch):
    _, port = bmc
    io_thread = ipmisession.iothread
    short = PyghmiBmcs(Model(), [(node("short"), free_port(socket.SOCK_DGRAM))])  # type: ignore
    short.start()
    target, reading = short.bmcs[0].serversocket, threading.Event()
    read = ipmisession._io_recvfrom

    def slow_read(sock: socket.socket, size: int) -> object:
        if sock is target:  # the IO thread is held up reading this BMC's socket
            reading.set()
            time.sleep(0.3)
        return read(sock, size)

    monkeypatch.setattr(ipmisession, "_io_recvfrom", slow_read)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.sendto(b"\x01", ("127.0.0.1", port))  # any packet starts a pass over the sockets
    assert reading.wait(10)
    short.stop()
    monkeypatch.undo()
    assert ipmisession.iothread is io_thread and io_thread.is_alive()
    assert answers(port)


def test_a_bmc_socket_stays_non_blocking_when_pyghmi_sends_on_it(bmc):
    """pyghmi makes a socket blocking to send and non-blocking to read, from two threads: a
    read between the two would block the IO thread, and with it every BMC of the process."""
    _, port = bmc
    sock = next(s for s in ipmisession.iosockets if s.getsockname()[1] == port)
    ipmisession._io_sendto(sock, b"\x01", ("127.0.0.1", free_port(socket.SOCK_DGRAM)))
    assert not sock.getblocking()
    assert answers(port)


def test_a_port_taken_after_it_was_chosen_is_replaced_by_another():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        taken = squatter.getsockname()[1]
        with pytest.raises(OSError):
            PyghmiBmcs(Model(), [(node("fixed"), taken)])  # type: ignore[arg-type]
        bmcs = PyghmiBmcs(Model(), [(node("moved"), taken)],  # type: ignore[arg-type]
                          lambda: free_port(socket.SOCK_DGRAM))
    bmcs.start()
    try:
        assert bmcs.ports["moved"] != taken
        assert answers(bmcs.ports["moved"])
    finally:
        bmcs.stop()
