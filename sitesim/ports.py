"""Free loopback ports for the site's servers (tests run everything on port 0 style ports).

A port chosen here is bound later by another process, so two choosers may pick the same one in
between. `BERTH_PORT_RANGE=LOW-HIGH` makes every process that inherits it choose in that range
only: parallel test workers each get a range of their own, outside the kernel's ephemeral range
(where outgoing connections take their local ports)."""

from __future__ import annotations

import os
import random
import socket
import threading

RANGE_ENV = "BERTH_PORT_RANGE"
_TAKEN: set[int] = set()
_LOCK = threading.Lock()


def port_range() -> tuple[int, int] | None:
    """The inclusive range of `BERTH_PORT_RANGE`, or None (the kernel chooses)."""
    text = os.environ.get(RANGE_ENV, "").strip()
    if not text:
        return None
    low, _, high = text.partition("-")
    if not (low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535):
        raise ValueError(f"{RANGE_ENV}={text!r}: expected LOW-HIGH within 1024-65535")
    return int(low), int(high)


def _candidate(kind: int, bounds: tuple[int, int] | None) -> int | None:
    with socket.socket(socket.AF_INET, kind) as sock:
        try:
            sock.bind(("127.0.0.1", random.randint(*bounds) if bounds else 0))
        except OSError:
            return None
        return int(sock.getsockname()[1])


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A loopback port that is free now and not handed out before by this process."""
    bounds = port_range()
    while True:
        port = _candidate(kind, bounds)
        if port is None:
            continue
        with _LOCK:
            if port not in _TAKEN:
                _TAKEN.add(port)
                return port
