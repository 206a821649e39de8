"""Limits per client connection in front of the HTTP server, so that idle or slow clients
cannot take a service from everyone else.

The server (waitress, see common/worker.py) is handed a listening socket of the class below.
Its accept() caps connections per client address and in all (the excess gets 503 with
Retry-After and is closed); the sockets it returns see every byte received and sent, follow
where each request ends (common/httphead.py) and answer malformed or oversized heads
themselves (400/413/414/431). A thread closes what is overdue: a connection without a whole
request head `header_timeout` seconds after it opened (or after the first byte of a next
request on a kept-alive one), a request not whole `read_timeout` seconds after its first byte
(408 in both cases once bytes came), a kept-alive connection idle for `keepalive` seconds. A
WSGI wrapper tells the guard when the application runs a connection's request, so a request
being served, or waiting for a thread, is never timed; a request that waited for a thread
longer than `queue_timeout` seconds (the service is saturated) is answered 503 with
Retry-After instead of being run late. Every answer is a Berth status body."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

from common.httphead import HeadLimits, Refusal, RequestFraming
from common.status import simple_message, status_body

LOG = logging.getLogger(__name__)
SWEEP = 0.2  # seconds between two passes of the deadline thread
DRAIN_BYTES = 4 * 1024 * 1024  # read and dropped before a refusal, so the client sees it


@dataclass(frozen=True)
class Limits:
    """The settings (command-line flags of `<service>-api`)."""

    header_timeout: float = 10.0
    read_timeout: float = 30.0
    keepalive: float = 75.0
    per_address: int = 64
    max_connections: int = 1000
    queue_timeout: float = 30.0
    retry_after: int = 2
    head: HeadLimits = field(default_factory=HeadLimits)


def refusal(code: int, phrase: str, message: str,
            retry_after: int | None = None) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and status body of one of the server's own answers."""
    reason = phrase.title().replace(" ", "").replace("-", "")
    body = json.dumps(status_body(code, message, reason=reason,
                                  messages=[simple_message(message)],
                                  retry=code >= 500 or code == 408)).encode()
    headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
    return headers + [("Content-Type", "application/json"),
                      ("Content-Length", str(len(body)))], body


def answer(code: int, phrase: str, message: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP response with a status body; the connection closes after it."""
    headers, body = refusal(code, phrase, message, retry_after)
    head = "".join(f"{k}: {v}\r\n" for k, v in [("Connection", "close"), *headers])
    return f"HTTP/1.1 {code} {phrase}\r\n{head}\r\n".encode("latin-1") + body


class ConnectionGuard:
    """The connections of one server process and their deadlines."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.lock = threading.Lock()
        self.conns: dict[tuple[str, str], GuardedSocket] = {}
        self.per_address: dict[str, int] = {}
        self.draining = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sweep, name="connection-guard",
                                        daemon=True)

    def listener(self, sock: socket.socket) -> GuardedListener:
        """A listening socket for the server, on a duplicate of `sock`'s descriptor."""
        listener = GuardedListener(sock.family, sock.type, sock.proto,
                                   fileno=socket.dup(sock.fileno()))
        listener.guard = self
        return listener

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def busy(self) -> int:
        """Requests that have arrived and are not answered yet."""
        with self.lock:
            return sum(c.ready + c.busy for c in self.conns.values())

    def wsgi(self, app: WSGIApplication) -> WSGIApplication:
        """`app`, telling the guard when each connection's request is being served."""

        def guarded(environ: WSGIEnvironment,
                    start_response: StartResponse) -> Iterable[bytes]:
            key = (environ.get("REMOTE_ADDR", ""), environ.get("REMOTE_PORT", ""))
            conn = self.conns.get(key)
            if conn is None:
                return app(environ, start_response)
            queued = self._begin(conn)
            if queued > self.limits.queue_timeout:
                self._end(conn)
                return self._saturated(queued, start_response)
            try:
                result = app(environ, start_response)
            except BaseException:
                self._end(conn)
                raise
            return _Finishing(result, lambda: self._end(conn))

        return guarded

    def _begin(self, conn: GuardedSocket) -> float:
        """Mark the connection's request as served; how long it waited for a thread (s)."""
        with self.lock:
            conn.ready = max(conn.ready - 1, 0)
            conn.busy += 1
            return time.monotonic() - conn.arrived if conn.arrived else 0.0

    def _saturated(self, queued: float, start_response: StartResponse) -> list[bytes]:
        LOG.warning("Request refused after waiting %.1f s for a thread", queued)
        headers, body = refusal(503, "Service Unavailable", f"Every thread of the service "
                                f"was busy for {queued:.0f} s: try again later",
                                self.limits.retry_after)
        start_response("503 Service Unavailable", headers)
        return [body]

    def _end(self, conn: GuardedSocket) -> None:
        with self.lock:
            conn.busy -= 1
            conn.idle_since = time.monotonic()

    def admit(self, conn: GuardedSocket, addr: Sequence[object]) -> bytes | None:
        """Register an accepted connection, or the answer that refuses it."""
        host, port = str(addr[0]), str(addr[1])
        with self.lock:
            if self.draining:
                return answer(503, "Service Unavailable", "The server is stopping",
                              self.limits.retry_after)
            if len(self.conns) >= self.limits.max_connections:
                return answer(503, "Service Unavailable",
                              f"The server holds {self.limits.max_connections} connections",
                              self.limits.retry_after)
            held = self.per_address.get(host, 0)
            if held >= self.limits.per_address:
                return answer(503, "Service Unavailable",
                              f"{host} holds {self.limits.per_address} connections",
                              self.limits.retry_after)
            self.per_address[host] = held + 1
            conn.key = (host, port)
            conn.guard = self
            conn.framing = RequestFraming(self.limits.head)
            conn.idle_since = time.monotonic()
            self.conns[conn.key] = conn
        return None

    def forget(self, conn: GuardedSocket) -> None:
        """Called (lock held) when `conn` closes."""
        if self.conns.pop(conn.key, None) is None:
            return
        host = conn.key[0]
        left = self.per_address.get(host, 1) - 1
        if left > 0:
            self.per_address[host] = left
        else:
            self.per_address.pop(host, None)

    def _sweep(self) -> None:
        while not self._stop.wait(SWEEP):
            now = time.monotonic()
            try:
                with self.lock:
                    for conn in list(self.conns.values()):
                        verdict = conn.overdue(now, self.limits)
                        if verdict is not None:
                            conn.refuse(verdict)
            except Exception:  # the guard must outlive any one connection's trouble
                LOG.exception("connection deadline pass failed")


class _Finishing:
    """The application's response iterable; `done` runs once the server closes it."""

    def __init__(self, result: Iterable[bytes], done: Callable[[], None]) -> None:
        self._result, self._done = result, done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._result)

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        finally:
            self._done()


class GuardedListener(socket.socket):
    """The server's listening socket: accept() admits a connection or refuses it."""

    guard: ConnectionGuard
    BURST = 64  # refusals handled in one call before the server's loop gets a turn

    def accept(self) -> tuple[socket.socket, object]:  # type: ignore[override]
        for _ in range(self.BURST):
            raw, addr = super().accept()  # BlockingIOError when none is waiting
            conn = GuardedSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
            refusal = self.guard.admit(conn, addr)
            if refusal is None:
                return conn, addr
            conn.setblocking(False)
            with contextlib.suppress(OSError):
                conn.send(refusal)
            conn.close()
        raise BlockingIOError(errno.EAGAIN, "refused a burst of connections; more may wait")


class GuardedSocket(socket.socket):
    """One client connection as the server sees it."""

    guard: ConnectionGuard | None = None
    key: tuple[str, str] = ("", "")
    framing: RequestFraming
    idle_since = 0.0  # opened, or its last request answered
    last_send = 0.0
    first_byte = 0.0  # of the request arriving now
    arrived = 0.0  # when the last whole request arrived
    requests = 0  # fully arrived so far
    ready = 0  # arrived, not yet given to the application
    busy = 0  # in the application
    expired = False

    def recv(self, size: int, flags: int = 0) -> bytes:
        data = super().recv(size, flags)
        guard = self.guard
        if not data or guard is None:
            return data
        with guard.lock:
            if self.expired:
                return b""
            started = self.framing.started
            try:
                done = self.framing.feed(data)
            except Refusal as refusal:
                self.refuse(answer(refusal.code, refusal.phrase, refusal.message))
                return b""
            self.requests += done
            self.ready += done
            if done:
                self.arrived = time.monotonic()
            if self.framing.started and (done or not started):
                self.first_byte = time.monotonic()
        return data

    def send(self, data: ReadableBuffer, flags: int = 0) -> int:
        sent = super().send(data, flags)
        self.last_send = time.monotonic()
        return sent

    def close(self) -> None:
        guard = self.guard
        if guard is None:
            super().close()
            return
        with guard.lock:
            guard.forget(self)
            self.expired = True
            super().close()

    def overdue(self, now: float, limits: Limits) -> bytes | None:
        """What to send before closing this connection now (b"" for nothing), or None to
        leave it be. Called with the guard's lock held."""
        if self.expired or self.ready or self.busy:
            return None
        idle = now - max(self.idle_since, self.last_send)
        if not self.framing.started:
            limit = limits.header_timeout if self.requests == 0 else limits.keepalive
            return b"" if idle > limit and not self._waiting() else None
        waited = now - self.first_byte
        head_waited = idle if self.requests == 0 else waited
        if self.framing.in_head and head_waited > limits.header_timeout:
            return answer(408, "Request Timeout", "The request head did not arrive within "
                          f"{limits.header_timeout:g} s")
        if waited > limits.read_timeout:
            return answer(408, "Request Timeout",
                          f"The request did not arrive within {limits.read_timeout:g} s")
        return None

    def _waiting(self) -> bool:
        """Whether bytes have arrived that the server has not read yet: a kept-alive
        connection's next request sent just as its idle time ran out is served, not cut off
        unanswered (its head is then timed as any other)."""
        try:
            return bool(super().recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:  # BlockingIOError: nothing waiting; any other: the connection is gone
            return False

    def refuse(self, response: bytes) -> None:
        """Send `response` (if any) and end the connection; the server then sees it closed.
        Called with the guard's lock held."""
        self.expired = True
        with contextlib.suppress(OSError):
            self.setblocking(False)
            drained = 0
            while response and drained < DRAIN_BYTES:
                chunk = super().recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        with contextlib.suppress(OSError):
            if response:
                super().send(response)
            self.shutdown(socket.SHUT_RDWR)
