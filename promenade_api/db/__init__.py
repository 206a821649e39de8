"""Promenade's database: what its API processes share (Idempotency-Key entries), engines and
migrations. SQLite by default beside the service; PostgreSQL for several replicas."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine

from common import migrate, sqlite

MIGRATIONS = Path(__file__).with_name("migrations")
DEFAULT_DB = "sqlite:///promenade.db"


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL and a busy timeout so the API processes share the file
    (common.sqlite)."""
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    return sqlite.tune(create_engine(
        url, connect_args={"timeout": 30, "check_same_thread": False}), busy_timeout=30)


def upgrade(url: str, revision: str = "head") -> None:
    """Apply Alembic migrations to `url` (a fresh database or an older revision); processes
    starting at once (gunicorn workers, replicas) wait for each other."""
    migrate.upgrade(MIGRATIONS, url, "promenade", revision)
