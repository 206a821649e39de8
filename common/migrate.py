"""Alembic migrations run once at a time, whichever process or replica starts first."""

from __future__ import annotations

import contextlib
import fcntl
import zlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


@contextlib.contextmanager
def migration_lock(url: str, name: str) -> Iterator[None]:
    """Serialise migrations: a file lock beside a SQLite file, an advisory lock on PostgreSQL."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if not database or database == ":memory:":
            yield
            return
        lock_path = Path(database).with_name(Path(database).name + ".migrate-lock")
        with open(lock_path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    engine = create_engine(url)
    key = zlib.crc32(f"berth-migrate-{name}".encode())
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    finally:
        engine.dispose()


def upgrade(script_location: Path, url: str, name: str, revision: str = "head") -> None:
    """Apply migrations under `script_location` to `url` up to `revision`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    with migration_lock(url, name):
        command.upgrade(cfg, revision)
