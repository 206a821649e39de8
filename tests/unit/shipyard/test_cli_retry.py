"""The CLI survives a server closing an idle keep-alive connection between two polls."""

import socket
import threading

import click
import pytest

from shipyard_api.cli.session import Shipyard

BODY = b'{"id": "a1", "state": "complete"}'


def flaky_server(drops: int):
    """Closes the first `drops` connections without answering, then answers every request."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    seen = {"connections": 0, "posts": 0}

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            seen["connections"] += 1
            request = conn.recv(65536)
            if request.startswith(b"POST"):
                seen["posts"] += 1
            if seen["connections"] <= drops:
                conn.close()
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return sock, seen


def test_get_is_retried_after_a_dropped_connection():
    sock, seen = flaky_server(drops=2)
    try:
        sy = Shipyard(f"http://127.0.0.1:{sock.getsockname()[1]}", "t", "json", None)
        assert sy.request("GET", "/actions/a1") == {"id": "a1", "state": "complete"}
        assert seen["connections"] == 3
    finally:
        sock.close()


def test_post_is_never_resent_after_a_dropped_connection():
    sock, seen = flaky_server(drops=1)
    try:
        sy = Shipyard(f"http://127.0.0.1:{sock.getsockname()[1]}", "t", "json", None)
        with pytest.raises(click.ClickException, match="Cannot reach Shipyard"):
            sy.request("POST", "/actions", json={"name": "redeploy_server"})
        assert seen["posts"] == 1
    finally:
        sock.close()
