"""Under gunicorn every log line is JSON; a call's lines (worker threads too) carry its marker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens
from tests.unit.drydock import designs

MARKER = "0d5a8f0e-1111-4222-8333-444455556666"


def _lines(proc: ServiceProcess) -> list[dict[str, Any]]:
    text = proc.proc.output()
    parsed = []
    for raw in text.splitlines():
        if raw.strip():
            parsed.append(json.loads(raw))  # fails the test on any non-JSON line
    return parsed


def test_a_task_call_marks_every_line_it_produces_including_worker_threads(
        tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    href = designs.write(tmp_path / "site.yaml", designs.simple_site(["n1", "n2"]))
    dead = free_port()
    svc = ServiceProcess("drydock", tmp_path, {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "database": {"connection": f"sqlite:///{tmp_path}/drydock.db"},
        "maas": {"url": f"http://127.0.0.1:{dead}/MAAS", "retries": 0, "timeout": 1},
        "oob": {"request_timeout": 1, "poll_interval": 0.01},
        "steps": {"step_retries": 0, "step_retry_delay": 0.01, "outage_window": 0},
        "worker": {"threads": 1, "poll_interval": 0.05},
        "logging": {"json": "true"}})
    headers = {"X-Auth-Token": tokens["admin"], "X-Context-Marker": MARKER}
    try:
        created = requests.post(f"{svc.url}/api/v1.0/tasks", headers=headers, timeout=10,
                                json={"action": "destroy_nodes", "design_ref": href,
                                      "node_filter": None,
                                      "options": {"all_nodes": True}})
        assert created.status_code == 201
        task_id = created.json()["task_id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            task = requests.get(f"{svc.url}/api/v1.0/tasks/{task_id}", headers=headers,
                                timeout=10).json()
            if task["status"] == "complete":
                break
            time.sleep(0.1)
        assert task["status"] == "complete"
    finally:
        svc.stop()
    lines = _lines(svc)
    start = next(i for i, line in enumerate(lines) if line.get("method") == "POST")
    produced = [line for line in lines[start:] if not line["logger"].startswith("gunicorn")]
    assert {line["marker"] for line in produced} == {MARKER}
    assert any(line["logger"].startswith("drydock_api.tasks") for line in produced)
    lifecycle = [line for line in lines if line["logger"].startswith("gunicorn")]
    assert any("Booting worker" in line["message"] for line in lifecycle)


@pytest.mark.parametrize("service", ["shipyard", "promenade", "drydock"])
def test_every_line_of_each_service_is_json(tmp_path: Path, service: str) -> None:
    write_tokens(tmp_path / "tokens.yaml")
    svc = ServiceProcess(service, tmp_path, {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "database": {"connection": f"sqlite:///{tmp_path}/{service}.db"}})
    try:
        for path in ("/metrics", "/api/v1.0/health", "/api/v1.0/nowhere"):
            requests.get(svc.url + path, headers={"X-Context-Marker": MARKER}, timeout=10)
        metrics = requests.get(f"{svc.url}/metrics", timeout=10)
        assert metrics.status_code == 200 and "berth_http_requests_total" in metrics.text
    finally:
        svc.stop()
    lines = _lines(svc)
    assert {"ts", "level", "logger", "marker", "message"} <= set(lines[0])
    assert any(line.get("path") == "/api/v1.0/nowhere" and line["marker"] == MARKER
               for line in lines)
