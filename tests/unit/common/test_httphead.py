"""Where a request ends in a connection's bytes, and which heads the server refuses itself
(common/httphead.py, the connection guard's parser)."""

import json

import pytest

from common.connguard import answer
from common.httphead import HeadLimits, Refusal, RequestFraming

LIMITS = HeadLimits(max_line=100, max_fields=5, max_field=100, max_body=50)


def feed(*chunks: bytes) -> tuple[int, bool]:
    """(requests completed, whether a next one has begun) after `chunks`, in order."""
    framing = RequestFraming(LIMITS)
    done = sum(framing.feed(chunk) for chunk in chunks)
    return done, framing.started


@pytest.mark.parametrize("chunks,expected", [
    ((b"",), (0, False)),
    ((b"GET / HTTP/1.1\r\nHost: x",), (0, True)),
    ((b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",), (1, False)),
    ((b"GET / HTTP/1.1\r\nHo", b"st: x\r\n\r", b"\n"), (1, False)),
    ((b"\r\nGET / HTTP/1.1\r\n\r\n",), (1, False)),
    ((b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\nGET /",), (2, True)),  # pipelined
    ((b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab",), (0, True)),
    ((b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", b"cde"), (1, False)),
    ((b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",), (0, True)),
    ((b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",), (0, True)),
    ((b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", b"0\r\n\r\n"),
     (1, False)),
    ((b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n"
      b"GET / HTTP/1.1\r\n\r\n",), (2, False)),
])
def test_requests_are_counted_once_whole(chunks, expected):
    assert feed(*chunks) == expected


@pytest.mark.parametrize("data,code", [
    (b"GET /" + b"a" * 200, 414),  # no line end past the line limit
    (b"GET /" + b"a" * 200 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 10 + b"\r\n", 431),  # too many fields
    (b"GET / HTTP/1.1\r\nX: " + b"y" * 200 + b"\r\n\r\n", 431),  # one field too long
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300, 431),  # head over its limit, unfinished
    (b"POST / HTTP/1.1\r\nContent-Length: 500\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n", 413),
    (b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\n", 400),
    (b"GET  / HTTP/1.1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n folded\r\n\r\n", 400),
])
def test_heads_the_server_refuses(data, code):
    with pytest.raises(Refusal) as refused:
        feed(data)
    assert refused.value.code == code


def test_a_refusal_is_a_whole_response_with_a_status_body():
    raw = answer(503, "Service Unavailable", "127.0.0.1 holds 64 connections", 2)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    assert {"Connection: close", "Retry-After: 2", "Content-Type: application/json",
            f"Content-Length: {len(body)}"} <= set(lines[1:])
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 503 and status["retry"] is True
    assert status["reason"] == "ServiceUnavailable"
    assert status["details"]["messageList"][0]["message"] == "127.0.0.1 holds 64 connections"
