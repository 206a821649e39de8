"""The gunicorn worker the services run: gthread, but a request reaches a thread only once it
has fully arrived, so slow or idle clients cannot hold the threads.

gunicorn's gthread worker hands a connection to a thread as soon as its first bytes arrive;
the thread then blocks reading the rest, so `threads` clients sending half a request starve
everyone else for as long as they keep the connection open. This worker instead reads each
request (head and body) in the main loop without blocking, next to gthread's own keep-alive
handling, and gives it to a thread once complete:
- a request that is not complete within `read_timeout` seconds of its first byte (or of the
  connection opening) gets 408 and the connection is closed;
- a request's body is buffered up to BODY_BUFFER bytes (beyond that the application answers
  413 from Content-Length alone) and one worker buffers at most TOTAL_BUFFER bytes; past
  either, the request goes to a thread early, where every socket read and write is bounded by
  `read_timeout` too;
- `Expect: 100-continue` is answered here, so such clients send their body at once;
- connections per worker stay bounded by gunicorn's `worker_connections`.
gunicorn's own error answers (400, 414, 431, ...) are Berth status bodies (JSON), not HTML.
Why not async workers or a front proxy: the services are synchronous WSGI apps with blocking
database and HTTP calls; gevent would need monkey-patching everything they use, and a front
proxy is not part of the embedded `make run`. Buffering whole requests in the worker's event
loop is what such a proxy would do for us."""

from __future__ import annotations

import contextlib
import errno
import json
import selectors
import socket
import time
from functools import partial
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import TConn, ThreadWorker

from common.status import simple_message, status_body

BODY_BUFFER = 16 * 1024 * 1024
TOTAL_BUFFER = 256 * 1024 * 1024
RECV_SIZE = 256 * 1024
WAIT, GO, CONTINUE, EOF = "wait", "go", "continue", "eof"


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's error answer as a Berth status body (replaces util.write_error)."""
    text = mesg or reason
    body = json.dumps(status_body(
        status_int, reason, reason=reason.title().replace(" ", "").replace("-", ""),
        messages=[simple_message(text)], retry=status_int >= 500)).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin-1") + body)


def _chunks_complete(buf: bytearray, pos: int) -> bool:
    """Whether a chunked body starting at `pos` has its last chunk (or is malformed, which
    gunicorn's parser will answer)."""
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return False
        try:
            size = int(bytes(buf[pos:eol]).split(b";")[0].strip(), 16)
        except ValueError:
            return True
        if size <= 0:
            return buf.find(b"\r\n\r\n", eol) >= 0
        pos = eol + 2 + size + 2
        if pos > len(buf):
            return False


def request_state(buf: bytearray, *, max_line: int, max_head: int, max_body: int) -> str:
    """WAIT for more bytes, GO (complete, or something gunicorn will refuse), or CONTINUE
    (the head asks for 100-continue and the body has not come)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        too_long = buf.find(b"\r\n") < 0 and len(buf) > max_line
        return GO if too_long or len(buf) > max_head else WAIT
    length, chunked, expect = 0, False, False
    for line in bytes(buf[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            if not value.isdigit():
                return GO
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value
        elif name == b"expect":
            expect = value == b"100-continue"
    body = len(buf) - end - 4
    if chunked:
        if body > max_body or (buf.endswith(b"\r\n\r\n") and _chunks_complete(buf, end + 4)):
            return GO
    elif body >= length or length > max_body:
        return GO
    return CONTINUE if expect and body == 0 else WAIT


def strip_expect(buf: bytearray) -> None:
    """Drop the Expect header (already answered here, so gunicorn must not answer it)."""
    end = buf.find(b"\r\n\r\n")
    lines = bytes(buf[:end]).split(b"\r\n")
    kept = [ln for ln in lines if ln.partition(b":")[0].strip().lower() != b"expect"]
    buf[:end] = b"\r\n".join(kept)


class PrefixedSocket:
    """A client socket whose already-received bytes are read first; blocking reads and
    writes (in the worker threads) time out after `timeout` seconds."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.raw = sock
        self.buf = bytearray()
        self.timeout = timeout

    def fileno(self) -> int:
        return self.raw.fileno()

    def recv(self, size: int, *flags: int) -> bytes:
        if self.buf:
            out = bytes(self.buf[:size])
            del self.buf[:size]
            return out
        return self.raw.recv(size, *flags)

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.raw.settimeout(self.timeout)
        else:
            self.raw.setblocking(False)

    def fill(self, cap: int) -> bool:
        """Read what has arrived (non-blocking), up to `cap` buffered; False at EOF."""
        while len(self.buf) < cap:
            try:
                data = self.raw.recv(RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if not data:
                return False
            self.buf += data
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class BerthWorker(ThreadWorker):  # type: ignore[misc]
    """gthread that dispatches only whole requests (see the module docstring)."""

    read_timeout = 30.0

    def init_process(self) -> None:
        # gunicorn writes its own error answers through this module-level function
        util.write_error = write_json_error
        self.reading: dict[Any, float] = {}
        cfg = self.cfg
        self.max_line = (cfg.limit_request_line or 8190) + 2
        self.max_head = self.max_line + (cfg.limit_request_fields or 100) * (
            (cfg.limit_request_field_size or 8190) + 2) + 4
        super().init_process()

    def accept(self, listener: socket.socket) -> None:
        try:
            client, addr = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, PrefixedSocket(client, self.read_timeout), addr,
                     listener.getsockname())
        self._start_reading(conn)

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._start_reading(conn)

    def _start_reading(self, conn: Any) -> None:
        """Read what has come; dispatch a complete request at once (the usual case for a
        kept-alive connection), else wait for the rest in the poller."""
        conn.sock.setblocking(False)
        outcome = self._read(conn)
        if outcome == EOF:
            self.nr_conns -= 1
            conn.close()
        elif outcome == GO:
            conn.data_ready = True
            self.enqueue_req(conn)
        else:
            self.reading[conn] = time.monotonic() + self.read_timeout
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self._on_readable, conn))

    def _on_readable(self, conn: Any, client: Any) -> None:
        outcome = self._read(conn)
        if outcome == EOF:
            self._drop(conn)
        elif outcome == GO:
            self.poller.unregister(conn.sock)
            del self.reading[conn]
            conn.data_ready = True
            self.enqueue_req(conn)

    def _read(self, conn: Any) -> str:
        """EOF (nothing came), GO (dispatch now) or WAIT, after reading what has arrived."""
        buf = conn.sock.buf
        total = sum(len(c.sock.buf) for c in self.reading)
        cap = min(self.max_head + BODY_BUFFER, len(buf) + max(TOTAL_BUFFER - total, 0))
        still_open = conn.sock.fill(max(cap, 1))
        if not still_open and not buf:
            return EOF
        if not still_open or len(buf) >= cap:  # the client is done sending, or over the caps
            return GO
        state = request_state(buf, max_line=self.max_line, max_head=self.max_head,
                              max_body=BODY_BUFFER)
        if state == CONTINUE:
            strip_expect(buf)
            util.write_nonblock(conn.sock.raw, b"HTTP/1.1 100 Continue\r\n\r\n")
            return WAIT
        return state

    def _drop(self, conn: Any, answer: bool = False) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        self.reading.pop(conn, None)
        self.nr_conns -= 1
        if answer:
            with contextlib.suppress(OSError):
                write_json_error(conn.sock.raw, 408, "Request Timeout",
                                 f"The request did not arrive within {self.read_timeout} s")
        conn.close()

    def finish_request(self, conn: Any, fs: Any) -> None:
        super().finish_request(conn, fs)
        # a next (pipelined) request already buffered here makes no poll event: read it now
        if conn.sock.buf and conn in self.keepalived_conns:
            self.poller.unregister(conn.sock)
            self.keepalived_conns.remove(conn)
            self._start_reading(conn)

    def _cap_keepalive(self, deadline: float) -> None:
        """On shutdown: requests still arriving get until `deadline` too (order is kept)."""
        super()._cap_keepalive(deadline)
        for conn, until in self.reading.items():
            self.reading[conn] = min(until, deadline)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        for conn, deadline in list(self.reading.items()):
            if deadline > now:
                break
            self._drop(conn, answer=bool(conn.sock.buf))
