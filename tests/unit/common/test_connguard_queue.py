"""A saturated service answers 503 with Retry-After instead of running a request that waited
too long for a thread (common.connguard, with waitress as the services run it)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import waitress

from common.connguard import ConnectionGuard, Limits


@pytest.fixture
def one_thread_server() -> Iterator[tuple[int, threading.Event]]:
    """A one-thread server whose /slow holds that thread until the event is set."""
    release = threading.Event()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"] == "/slow":
            release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    guard = ConnectionGuard(Limits(queue_timeout=0.3))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    server = waitress.create_server(guard.wsgi(app), sockets=[guard.listener(sock)], threads=1,
                                    asyncore_use_poll=True)
    loop = threading.Thread(target=server.run, daemon=True)
    guard.start()
    loop.start()
    yield sock.getsockname()[1], release
    release.set()
    guard.stop()
    server.close()
    sock.close()


def _get(port: int, path: str, out: list[http.client.HTTPResponse | bytes]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    out.extend([resp, resp.read()])


def test_a_request_that_waited_past_the_queue_timeout_gets_503(
        one_thread_server: tuple[int, threading.Event]) -> None:
    port, release = one_thread_server
    slow: list[Any] = []
    queued: list[Any] = []
    first = threading.Thread(target=_get, args=(port, "/slow", slow))
    first.start()
    time.sleep(0.2)  # the one thread now holds /slow
    second = threading.Thread(target=_get, args=(port, "/fast", queued))
    second.start()
    time.sleep(0.8)  # /fast waits for the thread longer than the queue timeout
    release.set()
    first.join(10)
    second.join(10)
    assert slow[0].status == 200
    resp, body = queued
    assert resp.status == 503 and resp.getheader("Retry-After") == "2"
    status = json.loads(body)
    assert status["reason"] == "ServiceUnavailable" and status["retry"] is True
    assert "busy" in status["message"]
    again: list[Any] = []
    _get(port, "/fast", again)  # no longer saturated: served
    assert again[0].status == 200 and again[1] == b"ok"
