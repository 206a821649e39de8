"""Free loopback ports for the site's servers (tests run everything on port 0 style ports)."""

from __future__ import annotations

import socket
import threading

_TAKEN: set[int] = set()
_LOCK = threading.Lock()


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A loopback port that is free now and not handed out before by this process."""
    while True:
        with socket.socket(socket.AF_INET, kind) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        with _LOCK:
            if port not in _TAKEN:
                _TAKEN.add(port)
                return port
