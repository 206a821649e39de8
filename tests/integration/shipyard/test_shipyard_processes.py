"""Shipyard under gunicorn (two processes, engine threads inside) on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.services import ServiceProcess, write_tokens


@pytest.fixture(params=["sqlite", "postgresql"])
def shipyard(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = (f"sqlite:///{tmp_path}/shipyard.db" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    tokens = write_tokens(tmp_path / "tokens.yaml")
    proc = ServiceProcess("shipyard", tmp_path, {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "database": {"connection": url},
        "logging": {"json": "false"},
        "peers": {"promenade_url": "http://127.0.0.1:9", "drydock_url": "http://127.0.0.1:9",
                  "retries": 0},
        "documents": {"secret_key_file": tmp_path / "docs.key"},
        "workflow": {"api_workers": 1, "poll_interval": 0.05, "lease_seconds": 3},
    }, workers=2)
    try:
        yield proc.url, {"X-Auth-Token": tokens["admin"]}
    finally:
        proc.stop()


def test_actions_run_inside_the_api_processes(shipyard: Any) -> None:
    url, headers = shipyard
    created = []
    for node in ("node01", "node02", "node03"):
        resp = requests.post(f"{url}/api/v1.0/actions", headers=headers, timeout=30, json={
            "name": "redeploy_server", "parameters": {"target_nodes": node}})
        assert resp.status_code == 201, resp.text
        created.append(resp.json()["id"])
    deadline = time.monotonic() + 60
    views: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        views = [requests.get(f"{url}/api/v1.0/actions/{i}", headers=headers,
                              timeout=30).json() for i in created]
        if all(v["state"] == "failed" for v in views):
            break
        time.sleep(0.1)
    # No design was ever committed: each action stops at preflight, touching nothing.
    assert [v["reason"] for v in views] == ["MissingPrecondition"] * 3
    assert all(v["steps"][0]["attempts"] == 1 for v in views)
    listed = requests.get(f"{url}/api/v1.0/actions", headers=headers, timeout=30).json()
    assert [a["id"] for a in listed] == created
