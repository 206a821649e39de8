"""A real shipyard-api process (SQLite or PostgreSQL) with fake validating peers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shipyard_api.db import upgrade
from tests.integration.shipyard_docs.peers import FakePeer
from tests.support.services import ServiceProcess, write_tokens


@dataclass
class Shipyard:
    url: str
    tokens: dict[str, str]
    drydock: FakePeer
    promenade: FakePeer
    key_file: Path
    db_url: str

    def headers(self, who: str = "admin", **extra: str) -> dict[str, str]:
        return {"X-Auth-Token": self.tokens[who], **extra}


@pytest.fixture
def peers() -> Iterator[tuple[FakePeer, FakePeer]]:
    drydock, promenade = FakePeer("drydock"), FakePeer("promenade")
    try:
        yield drydock, promenade
    finally:
        drydock.release.set()
        promenade.release.set()
        drydock.stop()
        promenade.stop()


def start_shipyard(tmp_path: Path, db_url: str,
                   peers: tuple[FakePeer, FakePeer]) -> tuple[ServiceProcess, Shipyard]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    key = tmp_path / "keys" / "documents.key"
    from tests.support.procs import free_port

    port = free_port()
    # Migrated beforehand: two gunicorn workers migrating one fresh database at once race.
    upgrade(db_url)
    proc = ServiceProcess("shipyard", tmp_path, {
        "auth": {"strategy": "token", "token_file": tmp_path / "tokens.yaml",
                 "service_token": tokens["admin"]},
        "database": {"connection": db_url},
        "peers": {"shipyard_url": f"http://127.0.0.1:{port}", "drydock_url": peers[0].url,
                  "promenade_url": peers[1].url, "retries": 0},
        "documents": {"secret_key_file": key},
        "workflow": {"api_workers": 0},
    }, workers=2, port=port)
    return proc, Shipyard(proc.url, tokens, peers[0], peers[1], key, db_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def shipyard(request: pytest.FixtureRequest, tmp_path: Path,
             peers: tuple[FakePeer, FakePeer]) -> Iterator[Shipyard]:
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path}/shipyard.db"
    else:
        db_url = request.getfixturevalue("postgres_url")
    proc, sy = start_shipyard(tmp_path, db_url, peers)
    try:
        yield sy
    finally:
        proc.stop()
