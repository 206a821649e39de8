"""Each service opens its SQLite database with the shared settings (common.sqlite): WAL,
the busy timeout, and synchronous=NORMAL (1); Drydock's connections leave transactions to its
own BEGIN IMMEDIATE."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from drydock_api.db import make_engine as drydock_engine
from promenade_api.db import make_engine as promenade_engine
from shipyard_api.db import make_engine as shipyard_engine

ENGINES: dict[str, tuple[Callable[[str], Engine], int]] = {
    "shipyard": (shipyard_engine, 30000), "promenade": (promenade_engine, 30000),
    "drydock": (drydock_engine, 60000)}


@pytest.mark.parametrize("service", sorted(ENGINES))
def test_every_connection_gets_wal_normal_sync_and_the_busy_timeout(
        service: str, tmp_path: Path) -> None:
    make, busy = ENGINES[service]
    engine = make(f"sqlite:///{tmp_path}/{service}.db")
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == busy
            raw = conn.connection.dbapi_connection
            assert (getattr(raw, "isolation_level", "") is None) == (service == "drydock")
    finally:
        engine.dispose()
