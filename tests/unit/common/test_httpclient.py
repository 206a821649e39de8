"""Service-to-service calls: retries where safe, errors from peers' status bodies."""

import json

import pytest
import requests

from common.context import RequestContext
from common.errors import BadGateway, Conflict
from common.httpclient import ServiceClient
from common.status import simple_message, status_body


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


def test_503_then_success_is_retried_with_backoff():
    c, session, sleeps = client([UNAVAILABLE, UNAVAILABLE, (200, {"ok": True})])
    assert c.request("GET", "/x") == {"ok": True}
    assert len(session.calls) == 3
    assert sleeps == [0.1, 0.2]


def test_persistent_503_becomes_bad_gateway_carrying_the_peer_body():
    c, session, _ = client([UNAVAILABLE] * 4)
    with pytest.raises(BadGateway) as info:
        c.request("GET", "/x")
    assert len(session.calls) == 4
    assert info.value.peer_status["reason"] == "ServiceUnavailable"
    assert info.value.to_status()["details"]["peer_status"]["message"] == "busy"


def test_post_without_idempotency_key_is_never_retried():
    c, session, _ = client([UNAVAILABLE, (201, {})])
    with pytest.raises(BadGateway):
        c.request("POST", "/tasks", json_body={"a": 1})
    assert len(session.calls) == 1


def test_post_with_idempotency_key_is_retried_and_sends_the_key():
    c, session, _ = client([UNAVAILABLE, (201, {"task_id": "t"})])
    assert c.request("POST", "/tasks", json_body={}, idempotency_key="k1") == {"task_id": "t"}
    assert [call[2]["headers"]["Idempotency-Key"] for call in session.calls] == ["k1", "k1"]


def test_connection_errors_are_retried_then_reported():
    c, session, _ = client([requests.ConnectionError("refused")] * 2, retries=1)
    with pytest.raises(BadGateway, match="unreachable"):
        c.request("GET", "/x")
    assert len(session.calls) == 2


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
