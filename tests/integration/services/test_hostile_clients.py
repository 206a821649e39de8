"""Hostile clients against real service processes: half-sent requests starve nobody, slow
requests get 408, the server's own refusals are status bodies, chunked bodies are read."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens

HALF_SENT = 64


def _sections(work: Path, svc: str, tokens: dict[str, str], port: int) -> dict[str, dict]:
    return {"auth": {"strategy": "token", "token_file": work / "tokens.yaml",
                     "service_token": tokens["admin"]},
            "database": {"connection": f"sqlite:///{work}/{svc}.db"},
            "peers": {"shipyard_url": f"http://127.0.0.1:{port}"},
            "workflow": {"api_workers": 0}}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    work = tmp_path_factory.mktemp("hostile")
    tokens = write_tokens(work / "tokens.yaml")
    procs: list[ServiceProcess] = []
    try:
        port = free_port()
        # the half-sent requests and the normal ones all come from 127.0.0.1: room for both
        shipyard = ServiceProcess("shipyard", work, _sections(work, "shipyard", tokens, port),
                                  port=port, args=("--per-address-connections", "256"))
        procs.append(shipyard)
        # a short read timeout, so that a stalled request is answered 408 during the test
        promenade = ServiceProcess("promenade", work,
                                   _sections(work, "promenade", tokens, port),
                                   args=("--read-timeout", "2"))
        procs.append(promenade)
        yield {"shipyard": shipyard, "promenade": promenade, "tokens": tokens, "work": work}
    finally:
        for proc in procs:
            proc.stop()


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


class Responses:
    """Reads whole responses (Content-Length framed) off one socket, one after the other
    (bytes of a next response that came with this one are kept for it)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.data = sock, b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.data += chunk
        return bool(chunk)

    def next(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.data and self._fill():
            pass
        head, _, rest = self.data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (ln.partition(":") for ln in lines[1:])}
        length = int(headers.get("content-length", "0"))
        self.data = rest
        while len(self.data) < length and self._fill():
            pass
        body, self.data = self.data[:length], self.data[length:]
        return int(lines[0].split()[1]), headers, body


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    return Responses(sock).next()


def test_64_half_sent_requests_do_not_stop_others_being_answered(services):
    url = services["shipyard"].url
    token = services["tokens"]["reader"]
    held = []
    try:
        for i in range(HALF_SENT):
            sock = _connect(url)
            if i % 2:  # half of them stall inside the head, half inside the body
                sock.sendall(b"GET /api/v1.0/actions HTTP/1.1\r\nHost: x\r\nX-Aut")
            else:
                sock.sendall(b"POST /api/v1.0/actions HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            held.append(sock)

        def normal(_: int) -> int:
            return requests.get(f"{url}/api/v1.0/actions", headers={"X-Auth-Token": token},
                                timeout=20).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(normal, range(32)))
        assert codes == [200] * 32
        assert requests.get(f"{url}/api/v1.0/health", timeout=20).status_code == 204
    finally:
        for sock in held:
            sock.close()


def test_a_request_that_never_completes_gets_408_as_a_status_body(services):
    sock = _connect(services["promenade"].url)
    try:
        sock.sendall(b"GET /versions HTTP/1.1\r\nHost: x\r\n")
        code, headers, body = _response(sock)
    finally:
        sock.close()
    assert code == 408 and headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == 408


def test_an_over_long_request_line_gets_414_as_a_status_body(services):
    resp = requests.get(f"{services['promenade'].url}/versions?x={'a' * 10000}", timeout=20)
    assert resp.status_code == 414
    assert resp.json()["kind"] == "Status" and resp.json()["code"] == 414


def test_too_many_header_bytes_get_431_as_a_status_body(services):
    headers = {f"X-H{i}": "v" * 8000 for i in range(120)}
    resp = requests.get(f"{services['promenade'].url}/versions", headers=headers, timeout=20)
    assert resp.status_code in (400, 431)
    assert resp.json()["kind"] == "Status" and resp.json()["code"] == resp.status_code


def test_a_chunked_body_is_read_whole(services):
    token = services["tokens"]["admin"]
    body = json.dumps({"rel": "design", "href": "file:///etc/passwd"}).encode()

    def chunks() -> Iterator[bytes]:
        yield body[:10]
        yield body[10:]

    resp = requests.post(f"{services['promenade'].url}/api/v1.0/validatedesign", data=chunks(),
                         headers={"X-Auth-Token": token, "Content-Type": "application/json"},
                         timeout=20)
    # an empty body would be "MissingDesignRef": the refusal shows the body was read
    assert resp.status_code == 400 and resp.json()["reason"] == "DesignRefNotAllowed"


def test_expect_100_continue_is_answered_before_the_body(services):
    token = services["tokens"]["admin"]
    body = json.dumps({"href": "file:///etc/passwd"}).encode()
    sock = _connect(services["promenade"].url)
    try:
        sock.sendall(b"POST /api/v1.0/validatedesign HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                     + f"X-Auth-Token: {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        code, _, answer = _response(sock)
    finally:
        sock.close()
    assert code == 400 and json.loads(answer)["reason"] == "DesignRefNotAllowed"


def test_keep_alive_and_pipelined_requests_are_answered(services):
    sock = _connect(services["promenade"].url)
    try:
        one = b"GET /versions HTTP/1.1\r\nHost: x\r\n\r\n"
        responses = Responses(sock)
        sock.sendall(one + one)
        first, second = responses.next(), responses.next()
        sock.sendall(one)
        third = responses.next()
    finally:
        sock.close()
    assert [r[0] for r in (first, second, third)] == [200, 200, 200]


def test_a_body_over_the_server_limit_is_refused_413_before_it_is_sent(services):
    sock = _connect(services["promenade"].url)
    try:  # 17 MiB announced (the server buffers 16 MiB at most), none of it sent
        sock.sendall(b"POST /api/v1.0/validatedesign HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 17825792\r\n\r\n")
        code, headers, body = _response(sock)
    finally:
        sock.close()
    assert code == 413 and headers["content-type"] == "application/json"
    assert json.loads(body)["reason"] == "PayloadTooLarge"
