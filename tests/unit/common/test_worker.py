"""When the services' gunicorn worker considers a request complete (pure functions)."""

import pytest

from common.worker import CONTINUE, GO, WAIT, PrefixedSocket, request_state, strip_expect

LIMITS = {"max_line": 100, "max_head": 1000, "max_body": 50}


def state(data: bytes) -> str:
    return request_state(bytearray(data), **LIMITS)


@pytest.mark.parametrize("data,expected", [
    (b"", WAIT),
    (b"GET / HTTP/1.1\r\nHost: x", WAIT),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", GO),
    (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", WAIT),
    (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", GO),
    (b"POST / HTTP/1.1\r\nContent-Length: 500\r\n\r\n", GO),  # over the cap: the app says 413
    (b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", GO),  # malformed: gunicorn says 400
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", WAIT),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", GO),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n", GO),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", GO),
    (b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", CONTINUE),
    (b"GET /" + b"a" * 200, GO),  # no line end past the line limit: gunicorn says 414
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300, GO),  # head over its limit: 431
])
def test_request_state(data, expected):
    assert state(data) == expected


def test_strip_expect_keeps_every_other_header_and_the_body():
    buf = bytearray(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab")
    strip_expect(buf)
    assert bytes(buf) == b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"
    assert state(bytes(buf)) == GO


def test_buffered_bytes_are_read_before_the_socket():
    class Raw:
        def recv(self, size):
            return b"late"

    sock = PrefixedSocket(Raw(), 1.0)  # type: ignore[arg-type]
    sock.buf += b"early"
    assert sock.recv(3) == b"ear" and sock.recv(10) == b"ly" and sock.recv(10) == b"late"
