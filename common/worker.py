"""The gunicorn worker the services run: waitress serves the app inside each gunicorn worker
process, behind the connection limits of common/connguard.py.

gunicorn stays the process manager (workers, their timeouts, pid file, signals, its JSON
lifecycle lines); this class is its documented extension point (a subclass of
`gunicorn.workers.base.Worker` that provides `run()`). waitress is used through its public
`create_server(app, sockets=[...], **adjustments)`: its event loop reads each request whole
(head and body) before one of its `threads` runs the application, answers `Expect:
100-continue`, and writes responses without holding a thread on a slow reader. The guard adds
what waitress lacks: head and request deadlines, connections capped per client address and in
all with 503 and Retry-After, and status bodies for the server's own refusals."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import replace

import waitress
from gunicorn.workers.base import Worker

from common.connguard import ConnectionGuard, Limits
from common.httphead import HeadLimits
from common.poll import NotYet, poll

HEARTBEAT = 1.0
SWITCH_INTERVAL = 0.001


class WaitressWorker(Worker):  # type: ignore[misc]
    """One gunicorn worker process serving with waitress (see the module docstring)."""

    limits = Limits()

    def run(self) -> None:
        cfg = self.cfg
        limits = replace(self.limits, head=HeadLimits(
            max_line=cfg.limit_request_line or 8190,
            max_fields=cfg.limit_request_fields or 100,
            max_field=cfg.limit_request_field_size or 8190,
            max_body=self.limits.head.max_body))
        guard = ConnectionGuard(limits)
        # waitress's one I/O thread releases the GIL at every socket call and must get it
        # back from up to `threads` busy application threads: at CPython's default 5 ms
        # per hand-over, requests wait in its loop (p99 x2-4 in bench/api_load.py)
        sys.setswitchinterval(SWITCH_INTERVAL)
        # waitress warns each time a request waits for a thread: under load, every request
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        server = waitress.create_server(
            guard.wsgi(self.wsgi),
            sockets=[guard.listener(s) for s in self.sockets],
            threads=cfg.threads,
            # the guard refuses first (503); waitress would stop accepting instead
            connection_limit=limits.max_connections + 64,
            # a backstop only: the guard closes idle connections long before
            channel_timeout=limits.keepalive + limits.read_timeout,
            max_request_header_size=2 * limits.head.max_head,
            max_request_body_size=2 * limits.head.max_body,
            recv_bytes=65536,
            asyncore_use_poll=True,  # select() stops at 1,024 descriptors
            log_socket_errors=False,
            ident="berth")
        loop = threading.Thread(target=server.run, name="waitress", daemon=True)
        guard.start()
        loop.start()
        self.log.info("Serving with waitress: %d threads, %d connections at most (%d per "
                      "client address)", cfg.threads, limits.max_connections,
                      limits.per_address)
        while self.alive and loop.is_alive():
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
            time.sleep(HEARTBEAT)
        self._drain(guard)

    def _drain(self, guard: ConnectionGuard) -> None:
        """Refuse new connections and give the requests that came their answers (at most
        gunicorn's `graceful_timeout`)."""
        with guard.lock:
            guard.draining = True
        answered = False

        def idle() -> None | NotYet[None]:
            return NotYet() if guard.busy() else None

        def answering(_: None) -> None:
            nonlocal answered
            answered = True
            self.notify()

        poll(idle, deadline=time.monotonic() + self.cfg.graceful_timeout, interval=0.1,
             expire=lambda _: None, between=answering)
        if answered:
            time.sleep(0.2)  # for waitress to send what the last answers left in its buffers
        guard.stop()


def configure(limits: Limits) -> None:
    """The limits every worker of this process tree uses (set before gunicorn forks)."""
    WaitressWorker.limits = limits
