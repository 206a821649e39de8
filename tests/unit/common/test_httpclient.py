"""Service-to-service calls: retries where safe, errors from peers' status bodies."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from common.context import RequestContext
from common.errors import BadGateway, Conflict, Timeout
from common.httpclient import ServiceClient
from common.status import simple_message, status_body
from sitesim.ports import free_port


class FakeSession(requests.Session):
    """Answers from a script of (code, body) or exceptions; records every call."""

    def __init__(self, script):
        super().__init__()
        self.script = list(script)
        self.calls = []

    def request(self, method, url, **kwargs):
        self.calls.append((method, url, kwargs))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        code, body = item
        resp = requests.Response()
        resp.status_code = code
        resp._content = json.dumps(body).encode() if body is not None else b""
        resp.headers["Content-Type"] = "application/json"
        return resp


def client(script, retries=3):
    session = FakeSession(script)
    sleeps = []
    c = ServiceClient("http://peer", name="Peer", retries=retries, backoff=0.1,
                      session=session, sleep=sleeps.append, jitter=lambda: 0.0)
    return c, session, sleeps


UNAVAILABLE = (503, status_body(503, "busy", reason="ServiceUnavailable"))


class Peer:
    """A peer on a real socket answering a script of (code, body[, headers]) in order, then
    200 {}; or, for an item "hang", not answering before the client's read timeout."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = []
        self.hang = threading.Event()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                peer.calls.append((self.command, self.path, dict(self.headers), body))
                item = peer.script.pop(0) if peer.script else (200, {})
                if item == "hang":
                    peer.hang.wait(5)
                    return
                code, answer, *headers = item
                data = json.dumps(answer).encode() if answer is not None else b""
                self.send_response(code)
                for name, value in (headers[0] if headers else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.hang.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def peer():
    made = []

    def make(script):
        made.append(Peer(script))
        return made[-1]

    yield make
    for p in made:
        p.close()


def live(peer, script, retries=3, **kwargs):
    server = peer(script)
    sleeps = []
    c = ServiceClient(server.url, name="Peer", retries=retries, backoff=0.1,
                      sleep=sleeps.append, jitter=lambda: 0.0, **kwargs)
    return c, server, sleeps


def test_503_then_success_is_retried_with_backoff(peer):
    c, server, sleeps = live(peer, [UNAVAILABLE, UNAVAILABLE, (200, {"ok": True})])
    assert c.request("GET", "/x") == {"ok": True}
    assert len(server.calls) == 3
    assert sleeps == [0.1, 0.2]


def test_jitter_stretches_each_wait(peer):
    server = peer([UNAVAILABLE, UNAVAILABLE])
    sleeps = []
    c = ServiceClient(server.url, backoff=0.1, sleep=sleeps.append, jitter=lambda: 0.5)
    assert c.request("GET", "/x") == {}
    assert sleeps == pytest.approx([0.15, 0.3])


def test_a_peers_retry_after_is_honoured(peer):
    busy = (503, status_body(503, "busy", reason="ServiceUnavailable"), {"Retry-After": "3"})
    c, server, sleeps = live(peer, [busy, (200, {"ok": True})])
    assert c.request("GET", "/x") == {"ok": True}
    assert sleeps == [3.0]


def test_persistent_503_becomes_bad_gateway_carrying_the_peer_body(peer):
    c, server, _ = live(peer, [UNAVAILABLE] * 4)
    with pytest.raises(BadGateway) as info:
        c.request("GET", "/x")
    assert len(server.calls) == 4
    assert info.value.peer_status["reason"] == "ServiceUnavailable"
    assert info.value.to_status()["details"]["peer_status"]["message"] == "busy"


def test_post_without_idempotency_key_is_never_retried(peer):
    c, server, _ = live(peer, [UNAVAILABLE, (201, {})])
    with pytest.raises(BadGateway):
        c.request("POST", "/tasks", json_body={"a": 1})
    assert len(server.calls) == 1


def test_post_with_idempotency_key_is_retried_and_sends_the_key(peer):
    c, server, _ = live(peer, [UNAVAILABLE, (201, {"task_id": "t"})])
    assert c.request("POST", "/tasks", json_body={}, idempotency_key="k1") == {"task_id": "t"}
    assert [call[2]["Idempotency-Key"] for call in server.calls] == ["k1", "k1"]
    assert [json.loads(call[3]) for call in server.calls] == [{}, {}]


def test_connection_errors_are_retried_then_reported():
    sleeps = []
    c = ServiceClient(f"http://127.0.0.1:{free_port()}", name="Peer", retries=1, backoff=0.1,
                      sleep=sleeps.append, jitter=lambda: 0.0)
    with pytest.raises(BadGateway, match="unreachable"):
        c.request("GET", "/x")
    assert sleeps == [0.1]


def test_a_refused_post_without_key_is_not_retried():
    sleeps = []
    c = ServiceClient(f"http://127.0.0.1:{free_port()}", retries=3, sleep=sleeps.append)
    with pytest.raises(BadGateway, match="unreachable"):
        c.request("POST", "/tasks", json_body={})
    assert sleeps == []


def test_a_peer_that_does_not_answer_in_time_is_a_timeout_after_the_retries(peer):
    c, server, sleeps = live(peer, ["hang", "hang"], retries=1, read_timeout=0.2)
    with pytest.raises(Timeout, match="did not answer GET /x in time"):
        c.request("GET", "/x")
    assert len(server.calls) == 2 and sleeps == [0.1]


def test_a_post_without_key_that_times_out_is_a_timeout_at_once(peer):
    c, server, sleeps = live(peer, ["hang"], read_timeout=0.2)
    with pytest.raises(Timeout):
        c.request("POST", "/tasks", json_body={})
    assert len(server.calls) == 1 and sleeps == []


def test_peer_4xx_status_body_becomes_our_error_with_its_messages():
    peer = status_body(409, "busy", reason="Conflict", messages=[simple_message("node01 in use")])
    c, _, _ = client([(409, peer)])
    with pytest.raises(Conflict) as info:
        c.request("GET", "/x")
    assert info.value.messages[0]["message"] == "node01 in use"


def test_context_and_token_are_forwarded():
    c, session, _ = client([(200, {})])
    c._token = "svc"
    ctx = RequestContext(end_user="alice")
    c.request("GET", "/x", ctx=ctx)
    headers = session.calls[0][2]["headers"]
    assert headers["X-Context-Marker"] == ctx.marker
    assert headers["X-End-User"] == "alice"
    assert headers["X-Auth-Token"] == "svc"
