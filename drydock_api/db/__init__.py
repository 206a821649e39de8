"""Drydock's database: engines (SQLite or PostgreSQL), sessions and Alembic migrations."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from common import migrate, sqlite

MIGRATIONS = Path(__file__).with_name("migrations")
# Execution option of the sessions that only read.
READ_ONLY = "berth_read_only"


def make_engine(url: str) -> Engine:
    """An engine; SQLite runs every transaction as BEGIN IMMEDIATE in WAL mode, so API and
    worker processes sharing the file serialise writes instead of failing with 'locked'.
    Sessions that only read (READ_ONLY) take no write lock: a deferred BEGIN reads a WAL
    snapshot that waits for no writer and no other reader."""
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=70)
    engine = sqlite.tune(create_engine(
        url, connect_args={"timeout": 60, "check_same_thread": False}, pool_size=8,
        max_overflow=72, pool_timeout=120), busy_timeout=60, autocommit=True)

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def read_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that only read (on SQLite they take no write lock)."""
    return sessionmaker(engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False)


def upgrade(url: str, revision: str = "head") -> None:
    """Apply Alembic migrations to `url` (a fresh database or an older revision); processes
    starting at once (API replicas, workers) wait for each other."""
    migrate.upgrade(MIGRATIONS, url, "drydock", revision)
