"""MAAS calls over a real socket: GET and DELETE retried on 502/503/504 and refused
connections (Retry-After honoured), POST never; the same MaasError whatever the failure."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from drydock_api.drivers.maas.client import MaasClient
from drydock_api.drivers.ports import MaasError
from sitesim.ports import free_port
from tests.support.httpserver import serving


class Script:
    """Answers (code, headers) in order, then 200 with an empty list; records each request."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, str]]] = []
        self.seen: list[str] = []


@pytest.fixture
def maas() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            script.seen.append(self.command)
            code, headers = script.answers.pop(0) if script.answers else (200, {})
            body = b"[]" if code == 200 else b"busy"
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *_: Any) -> None:
            pass

    with serving(Handler) as address:
        yield f"http://{address}/MAAS", script


def client(url: str, sleeps: list[float], retries: int = 3) -> MaasClient:
    return MaasClient(url, "", timeout=5, retries=retries, backoff=0.1, sleep=sleeps.append)


def test_get_is_retried_on_503_with_doubling_backoff(maas: tuple[str, Script]) -> None:
    url, script = maas
    script.answers = [(503, {}), (502, {})]
    sleeps: list[float] = []
    assert client(url, sleeps).list_machines() == []
    assert script.seen == ["GET"] * 3
    assert sleeps == [0.1, 0.2]


def test_retry_after_is_honoured(maas: tuple[str, Script]) -> None:
    url, script = maas
    script.answers = [(503, {"Retry-After": "2"})]
    sleeps: list[float] = []
    assert client(url, sleeps).list_machines() == []
    assert sleeps == [2.0]


def test_persistent_503_is_a_transient_maas_error_after_the_retries(
        maas: tuple[str, Script]) -> None:
    url, script = maas
    script.answers = [(503, {})] * 3
    with pytest.raises(MaasError) as info:
        client(url, [], retries=2).list_machines()
    assert script.seen == ["GET"] * 3
    assert info.value.transient and info.value.details["maas_code"] == 503


def test_post_is_never_retried(maas: tuple[str, Script]) -> None:
    url, script = maas
    script.answers = [(503, {})]
    with pytest.raises(MaasError) as info:
        client(url, []).commission("abc")
    assert script.seen == ["POST"]
    assert info.value.details["maas_code"] == 503


def test_a_refused_connection_is_retried_then_reported_unreachable() -> None:
    sleeps: list[float] = []
    with pytest.raises(MaasError, match="unreachable") as info:
        client(f"http://127.0.0.1:{free_port()}/MAAS", sleeps, retries=2).list_machines()
    assert info.value.transient
    assert sleeps == [0.1, 0.2]


def test_a_refused_post_is_not_retried() -> None:
    sleeps: list[float] = []
    with pytest.raises(MaasError, match="unreachable"):
        client(f"http://127.0.0.1:{free_port()}/MAAS", sleeps).commission("abc")
    assert sleeps == []
