"""Shipyard's database: the declarative Base, engines, sessions and migrations."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, create_engine
from sqlalchemy.orm import DeclarativeBase, sessionmaker

from common import migrate, sqlite

MIGRATIONS = Path(__file__).with_name("migrations")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    })


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL and a busy timeout so API and workers can share the file
    (common.sqlite)."""
    if url.startswith("sqlite"):
        return sqlite.tune(create_engine(
            url, connect_args={"timeout": 30, "check_same_thread": False}), busy_timeout=30)
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def session_factory(engine: Engine) -> sessionmaker:  # type: ignore[type-arg]
    return sessionmaker(engine, expire_on_commit=False)


def upgrade(url: str, revision: str = "head") -> None:
    """Apply Alembic migrations to `url` (a fresh database or an older revision); concurrent
    callers (gunicorn workers, replicas) wait for each other."""
    migrate.upgrade(MIGRATIONS, url, "shipyard", revision)
