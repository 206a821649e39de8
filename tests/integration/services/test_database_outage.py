"""A database outage is 503 ServiceUnavailable with Retry-After (a status body), never 500,
in all three services; each answers again once its PostgreSQL is back."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import sqlalchemy

from tests.fixtures.postgres import PG_BIN, _as_postgres
from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens

SERVICES = ("shipyard", "promenade", "drydock")
API = "/api/v1.0"


class Cluster:
    """A PostgreSQL cluster of this test alone (the session's is shared), stopped and started
    again on the same port and data."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="berth-pg-outage-"))
        self.data = self.root / "data"
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        _as_postgres(f"{PG_BIN}/initdb -D {self.data} -U postgres -A trust --no-sync "
                     ">/dev/null")
        self.start()

    def start(self) -> None:
        _as_postgres(f"{PG_BIN}/pg_ctl -D {self.data} -w -l {self.root}/pg.log -o "
                     f"'-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off' start")

    def stop(self) -> None:
        _as_postgres(f"{PG_BIN}/pg_ctl -D {self.data} -m fast -w stop")

    def database(self, name: str) -> str:
        admin = sqlalchemy.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        return self.url(name)

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def remove(self) -> None:
        with contextlib.suppress(Exception):  # already stopped
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip("PostgreSQL server binaries are not installed (Debian package postgresql)")
    made = Cluster()
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture
def services(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[dict[str, ServiceProcess],
                                                                   dict[str, str]]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    ports = {s: free_port() for s in SERVICES}
    peers = {f"{s}_url": f"http://127.0.0.1:{p}" for s, p in ports.items()}
    procs: dict[str, ServiceProcess] = {}
    try:
        for svc in SERVICES:
            procs[svc] = ServiceProcess(svc, tmp_path, {
                "auth": {"strategy": "token", "token_file": tmp_path / "tokens.yaml",
                         "service_token": tokens["admin"]},
                "database": {"connection": cluster.database(svc)},
                "peers": {**peers, "retries": 0},
                "logging": {"json": "false"},
            }, port=ports[svc])
        yield procs, tokens
    finally:
        for proc in procs.values():
            proc.stop()


def database_call(procs: dict[str, ServiceProcess], token: str, svc: str,
                  key: str) -> requests.Response:
    """A request each service answers from its database (Promenade's: the Idempotency-Key
    entry of a POST)."""
    headers = {"X-Auth-Token": token}
    url = procs[svc].url + API
    if svc == "shipyard":
        return requests.get(f"{url}/actions", headers=headers, timeout=60)
    if svc == "drydock":
        return requests.get(f"{url}/tasks", headers=headers, timeout=60)
    return requests.post(f"{url}/validatedesign", json={}, timeout=60,
                         headers={**headers, "Idempotency-Key": key})


@pytest.mark.slow
def test_a_database_outage_is_503_with_retry_after_and_the_services_recover(
        cluster: Cluster, services: tuple[dict[str, ServiceProcess], dict[str, str]]) -> None:
    procs, tokens = services
    before = {svc: database_call(procs, tokens["admin"], svc, "k1").status_code
              for svc in SERVICES}
    assert before == {"shipyard": 200, "drydock": 200, "promenade": 400}  # no design_ref
    cluster.stop()
    for svc in SERVICES:
        resp = database_call(procs, tokens["admin"], svc, "k2")
        body = resp.json()
        assert resp.status_code == 503, (svc, resp.text)
        assert int(resp.headers["Retry-After"]) > 0
        assert body["kind"] == "Status" and body["reason"] == "ServiceUnavailable"
        assert body["retry"] is True and "database" in body["message"]
        health = requests.get(f"{procs[svc].url}{API}/health", timeout=30)
        assert health.status_code == 503 and "Retry-After" in health.headers
    cluster.start()
    after = {svc: database_call(procs, tokens["admin"], svc, "k3").status_code
             for svc in SERVICES}
    assert after == before
