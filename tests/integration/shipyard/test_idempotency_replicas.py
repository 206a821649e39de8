"""Idempotency-Key across Shipyard processes: two gunicorn processes on one database (SQLite
file or PostgreSQL) answer a replayed POST alike, a restarted process too, another body under
the key is 422, and a replay while the first request still runs is 409 RequestInProgress."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens
from tests.unit.shipyard.design import design

API = "/api/v1.0"


class SlowPeer:
    """Drydock and Promenade as far as a commit needs them: `POST /validatedesign` answers
    "valid" after `delay` seconds (so a commit is still running when its replay arrives)."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.validations = 0
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/validatedesign"):
                    peer.validations += 1
                    time.sleep(peer.delay)
                    self._answer(200, {"kind": "Status", "apiVersion": "v1.0", "metadata": {},
                                       "status": "Success", "message": "valid",
                                       "reason": "Success", "code": 200, "retry": False,
                                       "details": {"errorCount": 0, "messageList": []}})
                else:
                    self._answer(404, {})

            do_GET = do_POST  # noqa: N815

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Replicas:
    one: ServiceProcess
    two: ServiceProcess
    headers: dict[str, str]
    peer: SlowPeer

    def post(self, proc: ServiceProcess, path: str, key: str, **kw: Any) -> requests.Response:
        headers = {**self.headers, "Idempotency-Key": key, **kw.pop("headers", {})}
        return requests.post(f"{proc.url}{API}{path}", headers=headers, timeout=60, **kw)

    def actions(self) -> list[dict[str, Any]]:
        resp = requests.get(f"{self.one.url}{API}/actions", headers=self.headers, timeout=30)
        listed: list[dict[str, Any]] = resp.json()
        return listed


@pytest.fixture(params=["sqlite", "postgresql"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Replicas]:
    url = (f"sqlite:///{tmp_path}/shipyard.db" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    tokens = write_tokens(tmp_path / "tokens.yaml")
    peer = SlowPeer()
    sections = {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "database": {"connection": url},
        "logging": {"json": "false"},
        "peers": {"promenade_url": peer.url, "drydock_url": peer.url, "retries": 0},
        "documents": {"secret_key_file": tmp_path / "docs.key"},
        # no engine threads: actions stay queued (nothing calls the peers but commits)
        "workflow": {"api_workers": 0},
    }
    procs: list[ServiceProcess] = []
    try:
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
            procs.append(ServiceProcess("shipyard", tmp_path / name, sections))
        yield Replicas(procs[0], procs[1], {"X-Auth-Token": tokens["admin"]}, peer)
    finally:
        for proc in procs:
            proc.stop()
        peer.stop()


ACTION = {"name": "redeploy_server", "parameters": {"target_nodes": ["node01"]}}


def test_one_key_on_two_processes_and_after_a_restart_creates_one_action(
        replicas: Replicas) -> None:
    first = replicas.post(replicas.one, "/actions", "create-1", json=ACTION)
    assert first.status_code == 201, first.text
    again = replicas.post(replicas.two, "/actions", "create-1", json=ACTION)
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Content-Type"] == first.headers["Content-Type"]
    assert again.headers["Idempotent-Replayed"] == "true"
    replicas.one.stop()
    replicas.one.start()  # the same process again: nothing of the key is in its memory
    replayed = replicas.post(replicas.one, "/actions", "create-1", json=ACTION)
    assert replayed.status_code == 201 and replayed.json() == first.json()
    assert [a["id"] for a in replicas.actions()] == [first.json()["id"]]
    other = dict(ACTION, parameters={"target_nodes": ["node02"]})
    reused = replicas.post(replicas.two, "/actions", "create-1", json=other)
    assert reused.status_code == 422 and reused.json()["reason"] == "IdempotencyKeyReused"
    assert len(replicas.actions()) == 1


def test_a_replay_while_the_first_request_runs_is_409_then_gets_its_answer(
        replicas: Replicas) -> None:
    docs = yaml.safe_dump_all(design())
    buffered = requests.post(f"{replicas.one.url}{API}/configdocs/site", data=docs,
                             params={"buffermode": "replace"}, timeout=60,
                             headers={**replicas.headers, "Content-Type": "application/x-yaml"})
    assert buffered.status_code == 201, buffered.text
    replicas.peer.delay = 3.0  # each peer's validatedesign: the commit runs ~6 s
    first: list[requests.Response] = []
    commit = threading.Thread(target=lambda: first.append(
        replicas.post(replicas.one, "/commitconfigdocs", "commit-1")))
    commit.start()
    deadline = time.monotonic() + 30
    while replicas.peer.validations == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = replicas.post(replicas.two, "/commitconfigdocs", "commit-1")
    commit.join(60)
    assert busy.status_code == 409, busy.text
    assert busy.json()["reason"] == "RequestInProgress" and busy.json()["retry"] is True
    assert int(busy.headers["Retry-After"]) >= 1
    assert first and first[0].status_code == 200, first[0].text if first else "no answer"
    replicas.peer.delay = 0.0
    validations = replicas.peer.validations
    replayed = replicas.post(replicas.two, "/commitconfigdocs", "commit-1")
    assert replayed.status_code == 200 and replayed.json() == first[0].json()
    assert replicas.peer.validations == validations  # not committed (validated) again
    revisions = requests.get(f"{replicas.two.url}{API}/revisions", headers=replicas.headers,
                             timeout=30).json()["results"]
    assert len(revisions) == 1
