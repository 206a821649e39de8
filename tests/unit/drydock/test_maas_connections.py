"""Many nodes polling MAAS at once reuse their connections: the MAAS client keeps an idle
connection per caller (up to MAAS_CONNECTIONS), where requests' default pool of 10 closed
every connection returned beyond the tenth and opened a new one for the next call."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from drydock_api.drivers.maas.client import MAAS_CONNECTIONS, MaasClient
from tests.support.httpserver import serving

CALLERS = 30  # nodes waiting on MAAS at the same time, beyond requests' default 10


class Seen:
    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self.lock = threading.Lock()
        self.together = threading.Barrier(CALLERS, timeout=10)


@pytest.fixture
def maas() -> Iterator[tuple[str, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as MAAS's region API

        def setup(self) -> None:
            super().setup()
            with seen.lock:
                seen.connections += 1

        def do_GET(self) -> None:  # noqa: N802 (the handler's naming)
            with seen.lock:
                seen.requests += 1
            seen.together.wait()  # every caller's request is in flight at once
            body = b"[]"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    with serving(Handler) as address:
        yield f"http://{address}/MAAS", seen


def test_concurrent_pollers_reuse_their_connections(maas: tuple[str, Seen]) -> None:
    url, seen = maas
    assert MAAS_CONNECTIONS >= CALLERS
    client = MaasClient(url, "", timeout=10)
    with ThreadPoolExecutor(CALLERS) as pool:
        for _ in range(3):  # three rounds of polls, every caller at once
            assert list(pool.map(lambda _: client.list_machines(), range(CALLERS))) \
                == [[]] * CALLERS
    assert seen.requests == 3 * CALLERS
    assert seen.connections == CALLERS  # opened in the first round, reused after
