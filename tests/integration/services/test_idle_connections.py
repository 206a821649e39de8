"""Idle and slow-header connections against real Shipyard and Drydock processes: a thousand
sockets that send nothing and 256 that send their head a byte at a time, all from 127.0.0.1,
leave /health and an authenticated GET from 127.0.0.2 answered; heads have a deadline; one
address holds at most its share of connections (the excess gets 503 with Retry-After)."""

from __future__ import annotations

import contextlib
import http.client
import json
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.procs import wait_until
from tests.support.services import ServiceProcess, write_tokens

IDLE, SLOW = 1000, 256
AUTHED = {"shipyard": "/api/v1.0/actions", "drydock": "/api/v1.0/tasks"}
OTHER_ADDRESS = "127.0.0.2"
TIMEOUT = 5.0  # what the clients from the other address wait at most
PARTIAL_HEAD = b"GET /api/v1.0/health HTTP/1.1\r\nHost: x\r\nX-Slow: "


@pytest.fixture(scope="module", autouse=True)
def descriptors() -> Iterator[None]:
    """Room for the held sockets here and in the service (which inherits the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * (IDLE + SLOW)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        cap = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _start(service: str, work: Path, *args: str) -> tuple[ServiceProcess, dict[str, str]]:
    tokens = write_tokens(work / "tokens.yaml")
    sections: dict[str, dict[str, object]] = {
        "auth": {"strategy": "token", "token_file": work / "tokens.yaml",
                 "service_token": tokens["admin"]},
        "database": {"connection": f"sqlite:///{work}/{service}.db"},
        "logging": {"level": "WARNING"}}
    if service == "shipyard":
        sections["workflow"] = {"api_workers": 0}
    return ServiceProcess(service, work, sections, args=args), tokens


def _accept_queue(port: int) -> int:
    """Connections waiting in the accept queue of the socket listening on 127.0.0.1:`port`
    (the rx_queue of its LISTEN line in /proc/net/tcp); -1 when no such socket."""
    local = f"0100007F:{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    return -1


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _from_other_address(port: int, path: str, token: str | None = None,
                        ) -> tuple[int, float, dict[str, str]]:
    """(status, seconds, headers) of one GET from 127.0.0.2 on a new connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT,
                                      source_address=(OTHER_ADDRESS, 0))
    started = time.monotonic()
    try:
        conn.request("GET", path, headers={"X-Auth-Token": token} if token else {})
        resp = conn.getresponse()
        resp.read()
        return resp.status, time.monotonic() - started, dict(resp.getheaders())
    finally:
        conn.close()


class SlowHeads:
    """`count` connections that send a request head one byte every `every` seconds."""

    def __init__(self, port: int, count: int, every: float = 0.5) -> None:
        self.socks = [_connect(port) for _ in range(count)]
        for sock in self.socks:
            sock.sendall(PARTIAL_HEAD)
        self.every, self.stopped = every, threading.Event()
        self.thread = threading.Thread(target=self._dribble, daemon=True)
        self.thread.start()

    def _dribble(self) -> None:
        while not self.stopped.wait(self.every):
            for sock in self.socks:
                with contextlib.suppress(OSError):
                    sock.send(b"a")

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        for sock in self.socks:
            sock.close()


def _closed_with(sock: socket.socket, timeout: float) -> bytes | None:
    """What the server sent before closing `sock` (None: still open after `timeout` s)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return None
    except OSError:  # reset: closed too
        pass
    return data


@pytest.mark.slow
@pytest.mark.parametrize("service", ["shipyard", "drydock"])
def test_idle_and_slow_head_connections_leave_another_address_answered(
        service: str, tmp_path: Path) -> None:
    # Caps raised above what the test opens: every socket is really held by the service.
    proc, tokens = _start(service, tmp_path, "--per-address-connections", "4000",
                          "--worker-connections", "4000", "--header-timeout", "60",
                          "--read-timeout", "60")
    idle: list[socket.socket] = []
    slow = None
    try:
        idle = [_connect(proc.port) for _ in range(IDLE)]
        slow = SlowHeads(proc.port, SLOW)
        # the service has taken every connection off its accept queue (else the other
        # address's connection waits behind them in the kernel, not in the service), and
        # the slow heads are dribbling
        wait_until(lambda: _accept_queue(proc.port) == 0, timeout=60, what="accepted all")
        time.sleep(1.0)
        health = _from_other_address(proc.port, "/api/v1.0/health")
        authed = _from_other_address(proc.port, AUTHED[service], tokens["reader"])
        print(f"{service}: /health {health[1] * 1000:.0f} ms, GET {AUTHED[service]} "
              f"{authed[1] * 1000:.0f} ms with {IDLE} idle and {SLOW} slow-head connections")
        assert health[0] == 204 and authed[0] == 200
        # every held connection is still open: the answers did not come from dropping them
        assert all(_closed_with(s, 0.01) is None for s in idle[:: IDLE // 20])
    finally:
        if slow is not None:
            slow.close()
        for sock in idle:
            sock.close()
        proc.stop()


@pytest.mark.slow
@pytest.mark.parametrize("service", ["shipyard", "drydock"])
def test_connections_without_a_whole_head_in_time_are_closed(service: str,
                                                             tmp_path: Path) -> None:
    proc, tokens = _start(service, tmp_path, "--header-timeout", "1")
    idle = [_connect(proc.port) for _ in range(20)]
    slow = SlowHeads(proc.port, 20, every=0.2)
    try:
        opened = time.monotonic()
        idle_ends = [_closed_with(s, 10) for s in idle]
        slow_ends = [_closed_with(s, 10) for s in slow.socks]
        waited = time.monotonic() - opened
    finally:
        slow.close()
        for sock in idle:
            sock.close()
    try:
        # idle: closed without a word; slow heads: 408 as a status body although bytes kept
        # coming; all within the deadline and one pass of the guard (generous bound)
        assert idle_ends == [b""] * 20
        for end in slow_ends:
            assert end is not None and end.startswith(b"HTTP/1.1 408 ")
            assert json.loads(end.partition(b"\r\n\r\n")[2])["code"] == 408
        assert waited < 8
        # a client that sends its request in time is answered as usual
        assert _from_other_address(proc.port, AUTHED[service], tokens["reader"])[0] == 200
    finally:
        proc.stop()


@pytest.mark.slow
@pytest.mark.parametrize("service", ["shipyard", "drydock"])
def test_one_address_holds_at_most_its_share_of_connections(service: str,
                                                            tmp_path: Path) -> None:
    proc, tokens = _start(service, tmp_path)  # defaults: 64 per address, 10 s head deadline
    idle: list[socket.socket] = []
    slow = None
    try:
        idle = [_connect(proc.port) for _ in range(IDLE)]
        slow = SlowHeads(proc.port, SLOW)
        last = _closed_with(slow.socks[-1], 10)  # the service has taken every connection
        ends = [_closed_with(s, 0.05) for s in idle + slow.socks[:-1]] + [last]
        held = sum(end is None for end in ends)
        refused = [end for end in ends if end is not None]
        # at most 64 are held (the first ones, unless their head deadline passed meanwhile);
        # every later one is answered 503 with Retry-After and closed
        assert held <= 64
        assert len(refused) >= IDLE + SLOW - 64
        assert all(end.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: " in end
                   for end in refused if end)
        assert sum(1 for end in refused if end) >= len(refused) // 2
        body = json.loads(next(end for end in refused if end).partition(b"\r\n\r\n")[2])
        assert body["kind"] == "Status" and body["code"] == 503 and body["retry"] is True
        # another address is not affected
        health = _from_other_address(proc.port, "/api/v1.0/health")
        authed = _from_other_address(proc.port, AUTHED[service], tokens["reader"])
        print(f"{service}: /health {health[1] * 1000:.0f} ms, GET {AUTHED[service]} "
              f"{authed[1] * 1000:.0f} ms beside 64 held connections of 127.0.0.1")
        assert health[0] == 204 and authed[0] == 200
        # once the held ones close, the address gets connections again
        for sock in idle[:64]:
            sock.close()
        wait_until(lambda: _local_health(proc.port) == 204, timeout=10,
                   what="127.0.0.1 answered again")
    finally:
        if slow is not None:
            slow.close()
        for sock in idle:
            sock.close()
        proc.stop()


def _local_health(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request("GET", "/api/v1.0/health")
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()
