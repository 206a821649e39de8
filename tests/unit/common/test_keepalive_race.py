"""A kept-alive connection closed by its server just as the client sends the next request:
the server does not cut off a request already waiting to be read (common.connguard), and a
document read by URL is sent again on a new connection when its connection closed unanswered,
never when the server only went silent (common.httpclient.DroppedRetry)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from common.connguard import ConnectionGuard, GuardedSocket, Limits
from common.designref import DesignResolver
from common.errors import Timeout
from drydock_api.bootactions.fetch import LocationFetcher

DOC = b"schema: drydock/Region/v1\nmetadata: {schema: metadata/Document/v1, name: s}\ndata: {}\n"
OK = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-yaml\r\n"
      b"Content-Length: %d\r\n\r\n" % len(DOC)) + DOC


def _kept_alive(limits: Limits) -> tuple[GuardedSocket, socket.socket]:
    """A guarded server end that has answered one request and been idle past `keepalive`."""
    server, client = socket.socketpair()
    conn = GuardedSocket(server.family, server.type, server.proto, fileno=server.detach())
    assert ConnectionGuard(limits).admit(conn, ("127.0.0.1", 40000)) is None
    conn.requests = 1
    conn.idle_since = time.monotonic() - 10 * limits.keepalive
    return conn, client


def test_an_idle_kept_alive_connection_is_closed_unless_a_request_waits_unread() -> None:
    limits = Limits(keepalive=1.0)
    conn, client = _kept_alive(limits)
    try:
        assert conn.overdue(time.monotonic(), limits) == b""  # idle, nothing sent: closed
        client.sendall(b"GET /next HTTP/1.1\r\n")
        assert conn.overdue(time.monotonic(), limits) is None  # arrived, not yet read: kept
        assert conn.recv(64) == b"GET /next HTTP/1.1\r\n"  # the look consumed nothing
    finally:
        conn.close()
        client.close()


def test_a_client_that_closed_its_idle_connection_is_closed_too() -> None:
    limits = Limits(keepalive=1.0)
    conn, client = _kept_alive(limits)
    client.close()
    try:
        assert conn.overdue(time.monotonic(), limits) == b""
    finally:
        conn.close()


class RawServer:
    """Answers each connection's requests by a script: OK, DROP (close unanswered), SILENT."""

    def __init__(self, script: list[list[str]]) -> None:
        self.script = script
        self.requests: list[tuple[int, bytes]] = []  # (connection number, request line)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for number, answers in enumerate(self.script):
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as reader:
                for answer in answers:
                    line = reader.readline()
                    while reader.readline() not in (b"\r\n", b""):
                        pass
                    self.requests.append((number, line.strip()))
                    if answer == "DROP":
                        conn.shutdown(socket.SHUT_RDWR)
                        break
                    if answer == "SILENT":
                        time.sleep(1.0)
                        break
                    conn.sendall(OK)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    raw = RawServer(request.param)
    yield raw
    raw.close()


def _resolver(url: str, timeout: float = 5.0) -> DesignResolver:
    return DesignResolver.from_conf(SimpleNamespace(  # type: ignore[arg-type]
        peers=SimpleNamespace(shipyard_url="http://127.0.0.1:9"),
        design=SimpleNamespace(allowed_urls=[f"{url}/"], file_root="", fetch_timeout=timeout,
                               max_document_bytes=1024 * 1024, cache_size=0, cache_ttl=0),
        auth=SimpleNamespace(service_token="")))


@pytest.mark.parametrize("server", [[["OK", "DROP"], ["OK"]]], indirect=True)
def test_a_design_read_on_a_connection_dropped_unanswered_is_sent_again(
        server: RawServer) -> None:
    resolver = _resolver(server.url)
    assert resolver.resolve(f"{server.url}/one")[0]["metadata"]["name"] == "s"
    assert resolver.resolve(f"{server.url}/two")[0]["metadata"]["name"] == "s"
    assert server.requests == [(0, b"GET /one HTTP/1.1"), (0, b"GET /two HTTP/1.1"),
                               (1, b"GET /two HTTP/1.1")]


@pytest.mark.parametrize("server", [[["OK", "DROP"], ["OK"]]], indirect=True)
def test_an_asset_read_on_a_connection_dropped_unanswered_is_sent_again(
        server: RawServer) -> None:
    fetch = LocationFetcher(None, timeout=5.0)
    assert fetch(f"{server.url}/one") == DOC
    assert fetch(f"{server.url}/two") == DOC
    assert [n for n, _ in server.requests] == [0, 0, 1]


@pytest.mark.parametrize("server", [[["SILENT"], ["OK"]]], indirect=True)
def test_a_silent_server_is_asked_once(server: RawServer) -> None:
    with pytest.raises(Timeout):
        _resolver(server.url, timeout=0.3).resolve(f"{server.url}/one")
    assert server.requests == [(0, b"GET /one HTTP/1.1")]
