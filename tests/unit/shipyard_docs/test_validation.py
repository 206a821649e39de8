"""Peers' validatedesign over HTTP, Shipyard's own checks, the key file and the deps builder."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from common.context import RequestContext
from common.crypto import FernetCipher, load_or_create_key
from common.httpclient import ServiceClient
from common.status import status_body, validation_message
from shipyard_api.documents.deps import build_document_deps
from shipyard_api.documents.validation import HttpPeerValidator, shipyard_checks
from tests.unit.shipyard_docs.support import deployment_configuration, doc, make_conf, node

REF = "deckhand+http://shipyard/api/v1.0/revisions/3/rendered-documents"


class Answer:
    def __init__(self) -> None:
        self.code = 200
        self.body: Any = status_body(200, "Valid")
        self.seen: list[tuple[str, dict[str, Any], dict[str, str]]] = []


@pytest.fixture
def peer() -> Iterator[tuple[str, Answer]]:
    answer = Answer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer.seen.append((self.path, body, dict(self.headers)))
            data = (answer.body if isinstance(answer.body, str)
                    else json.dumps(answer.body)).encode()
            self.send_response(answer.code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answer
    finally:
        server.shutdown()
        server.server_close()


def validator(url: str) -> HttpPeerValidator:
    return HttpPeerValidator("drydock", ServiceClient(url, retries=0, token="svc"), timeout=5)


def test_a_valid_answer_becomes_an_info_message(peer: tuple[str, Answer]) -> None:
    url, answer = peer
    ctx = RequestContext(marker="4b4fdc57-8d57-4d3b-9c5a-7a43a1c0e0a1")
    [message] = validator(url)(REF, ctx)
    assert not message["error"] and message["source"] == "drydock"
    path, body, headers = answer.seen[0]
    assert path == "/api/v1.0/validatedesign" and body["href"] == REF
    assert body["rel"] == "design" and headers["X-Context-Marker"] == ctx.marker
    assert headers["X-Auth-Token"] == "svc"


def test_a_refusal_keeps_every_peer_message(peer: tuple[str, Answer]) -> None:
    url, answer = peer
    answer.code = 400
    answer.body = status_body(400, "Invalid", messages=[
        validation_message("rack r1 unknown", name="Rack"),
        validation_message("hint", name="Hint", error=False, level="Info")])
    messages = validator(url)(REF, None)
    assert [m["message"] for m in messages] == ["rack r1 unknown", "hint"]
    assert all(m["source"] == "drydock" for m in messages)


def test_a_failure_without_error_messages_is_still_an_error(peer: tuple[str, Answer]) -> None:
    url, answer = peer
    answer.code = 502
    answer.body = status_body(502, "MAAS unreachable")
    [message] = validator(url)(REF, None)
    assert message["error"] and "MAAS unreachable" in message["message"]


def test_an_answer_without_a_status_body_is_an_error(peer: tuple[str, Answer]) -> None:
    url, answer = peer
    answer.body = "<html>proxy</html>"
    [message] = validator(url)(REF, None)
    assert message["error"] and "without a status body" in message["message"]


def test_an_unreachable_peer_is_an_error() -> None:
    [message] = validator("http://127.0.0.1:9")(REF, None)
    assert message["error"] and "could not validate" in message["message"]


def test_shipyard_needs_a_deployment_configuration_and_its_strategy() -> None:
    assert shipyard_checks([node()])[0]["name"] == "DeploymentConfiguration"
    assert shipyard_checks([deployment_configuration()]) == []
    named = doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                {"physical_provisioner": {"deployment_strategy": "my-strategy"}})
    assert shipyard_checks([named])[0]["name"] == "DeploymentStrategy"
    strategy = doc("shipyard/DeploymentStrategy/v1", "my-strategy", {"groups": []})
    assert shipyard_checks([named, strategy]) == []


def test_the_key_file_is_created_private_once_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "documents.key"
    key = load_or_create_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key
    cipher = FernetCipher(key)
    assert cipher.decrypt(cipher.encrypt("x")) == "x"


def test_build_document_deps_migrates_and_uses_config(tmp_path: Path) -> None:
    conf = make_conf()
    conf.set_override("connection", f"sqlite:///{tmp_path}/s.db", group="database")
    conf.set_override("secret_key_file", str(tmp_path / "k"), group="documents")
    conf.set_override("public_url", "http://sy.example:9000", group="documents")
    conf.set_override("validation_peers", ["drydock"], group="documents")
    deps = build_document_deps(conf)
    assert deps.public_url == "http://sy.example:9000"
    assert deps.store.revision_id("committed") is None and (tmp_path / "k").exists()
