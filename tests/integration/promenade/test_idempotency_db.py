"""Promenade's database: `promenade-api` migrates it at start (SQLite beside it by default,
or the `[database] connection` given), and two Promenade processes on one database answer a
replayed POST with the first answer, also after a restart; another body under the key: 422."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml
from sqlalchemy import create_engine, inspect

from common.idempotency_store import KEYS
from tests.support.services import ServiceProcess, write_tokens
from tests.unit.shipyard.design import design

VALIDATE = "/api/v1.0/validatedesign"


def ref(path: Path) -> dict[str, str]:
    return {"rel": "design", "href": f"file://{path}", "type": "application/x-yaml"}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/promenade.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, str]:
    return write_tokens(tmp_path / "tokens.yaml")


def sections(tmp_path: Path, database: str | None) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "logging": {"json": "false"},
        "design": {"file_root": tmp_path},
    }
    if database is not None:
        out["database"] = {"connection": database}
    return out


@pytest.fixture
def two(tmp_path: Path, database: str, tokens: dict[str, str]) -> Iterator[list[ServiceProcess]]:
    procs: list[ServiceProcess] = []
    try:
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
            procs.append(ServiceProcess("promenade", tmp_path / name,
                                        sections(tmp_path, database)))
        yield procs
    finally:
        for proc in procs:
            proc.stop()


def test_promenade_api_creates_its_database_at_start(two: list[ServiceProcess],
                                                     database: str) -> None:
    engine = create_engine(database)
    try:
        columns = {c["name"] for c in inspect(engine).get_columns("idempotency_keys")}
    finally:
        engine.dispose()
    assert columns == {c.name for c in KEYS.columns}


def test_without_a_connection_the_database_is_a_file_in_the_working_directory(
        tmp_path: Path, tokens: dict[str, str]) -> None:
    (tmp_path / "alone").mkdir()
    proc = ServiceProcess("promenade", tmp_path / "alone", sections(tmp_path, None))
    try:
        engine = create_engine(f"sqlite:///{tmp_path / 'alone' / 'promenade.db'}")
        assert "idempotency_keys" in inspect(engine).get_table_names()
        engine.dispose()
    finally:
        proc.stop()


def test_a_replay_on_the_other_process_or_after_a_restart_gets_the_first_answer(
        two: list[ServiceProcess], tokens: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "design.yaml").write_text(yaml.safe_dump_all(design()))
    (tmp_path / "other.yaml").write_text(yaml.safe_dump_all(design(nodes=("node09",),
                                                                   etcd=("node09",))))
    headers = {"X-Auth-Token": tokens["admin"], "Idempotency-Key": "validate-1"}

    def post(proc: ServiceProcess, path: Path) -> requests.Response:
        return requests.post(f"{proc.url}{VALIDATE}", json=ref(path), headers=headers,
                             timeout=60)

    first = post(two[0], tmp_path / "design.yaml")
    assert first.status_code == 200, first.text
    assert "Idempotent-Replayed" not in first.headers
    again = post(two[1], tmp_path / "design.yaml")
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    two[0].stop()
    two[0].start()
    replayed = post(two[0], tmp_path / "design.yaml")
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert replayed.json() == first.json()
    reused = post(two[1], tmp_path / "other.yaml")
    assert reused.status_code == 422 and reused.json()["reason"] == "IdempotencyKeyReused"
