"""`berth status`: exit 0 only when the env file exists, every service answers /health and the
committed design is visible with the token; otherwise exit 1 with one line saying why."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from berth_launcher.up import main

TOKEN = "the-admin-token"


class FakeService(BaseHTTPRequestHandler):
    """Health of every service and the sitesim admin API; Shipyard's revision 3 tags."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path in ("/api/v1.0/health", "/health"):
            self._send(204 if self.path.startswith("/api") else 200, None)
        elif self.path == "/api/v1.0/revisions/3/tags":
            if self.headers.get("X-Auth-Token") != TOKEN:
                self._send(401, {"message": "Unauthenticated"})
            else:
                self._send(200, [{"tag": "site-action-success"}])
        else:
            self._send(404, {"message": "not found"})

    def _send(self, code: int, body: object) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeService)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def write_env(berth_dir, url: str, token: str = TOKEN, **extra: str) -> None:
    values = {"SHIPYARD_URL": url, "PROMENADE_URL": url, "DRYDOCK_URL": url,
              "SITESIM_URL": url, "BERTH_TOKEN": token,
              "DESIGN_REF": f"deckhand+{url}/api/v1.0/revisions/3/rendered-documents", **extra}
    (berth_dir / "env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def run_status(berth_dir, *args: str):
    return CliRunner().invoke(main, ["status", "--dir", str(berth_dir), *args])


def test_ready_when_every_service_answers_and_the_design_is_visible(tmp_path, service):
    write_env(tmp_path, service)
    (tmp_path / "berth-up.pid").write_text(str(os.getpid()))
    result = run_status(tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ready: shipyard {service}, promenade {service}")
    assert "design revision 3 committed and tagged site-action-success" in result.output


def test_no_env_file_is_not_ready(tmp_path):
    result = run_status(tmp_path)
    assert result.exit_code == 1
    assert result.output == (f"not ready: no {tmp_path / 'env'}: berth up is not running "
                             "here, or not ready yet\n")


def test_a_service_that_does_not_answer_is_named(tmp_path, service):
    write_env(tmp_path, service, PROMENADE_URL="http://127.0.0.1:1")
    result = run_status(tmp_path)
    assert result.exit_code == 1
    assert result.output == ("not ready: promenade does not answer at "
                             "http://127.0.0.1:1/api/v1.0/health (connection refused)\n")


def test_tokens_of_another_run_are_not_ready(tmp_path, service):
    write_env(tmp_path, service, token="an-old-token")
    result = run_status(tmp_path)
    assert result.exit_code == 1
    assert "design revision 3 is not visible in Shipyard (401 at" in result.output


def test_an_ended_launcher_is_not_ready(tmp_path, service):
    write_env(tmp_path, service)
    (tmp_path / "berth-up.pid").write_text("999999999")
    result = run_status(tmp_path)
    assert result.exit_code == 1
    assert "berth up (pid 999999999" in result.output and "is not running" in result.output


def test_wait_gives_up_after_the_timeout_with_the_last_reason(tmp_path):
    started = time.monotonic()
    result = run_status(tmp_path, "--wait", "--timeout", "0.6", "--interval", "0.1")
    assert result.exit_code == 1
    assert 0.6 <= time.monotonic() - started < 5
    assert result.output.startswith("not ready: no ")


def test_wait_returns_once_ready(tmp_path, service):
    timer = threading.Timer(0.5, write_env, (tmp_path, service))
    timer.start()
    result = run_status(tmp_path, "--wait", "--timeout", "20", "--interval", "0.1")
    timer.join()
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ready: ")


def test_site_only_run_is_ready_without_services(tmp_path, service):
    (tmp_path / "env").write_text(f"SITESIM_URL={service}\nSHIPYARD_URL=http://127.0.0.1:1\n"
                                  f"DESIGN_REF=file://{tmp_path}/site-design.yaml\n")
    result = run_status(tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ready: the site only")
