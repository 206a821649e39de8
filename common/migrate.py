"""The one path by which every service applies its Alembic migrations: under one lock per
service and database, whichever process or replica starts first."""

from __future__ import annotations

import contextlib
import fcntl
import zlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command, context
from alembic.config import Config
from sqlalchemy import Connection, create_engine, engine_from_config, pool, text
from sqlalchemy.engine import make_url


def lock_key(name: str) -> int:
    """The PostgreSQL advisory lock key of a service's migrations."""
    return zlib.crc32(f"berth-migrate-{name}".encode())


@contextlib.contextmanager
def _file_lock(database: str | None) -> Iterator[None]:
    """SQLite: an exclusive lock on a file beside the database (none for a memory one)."""
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


@contextlib.contextmanager
def migration_connection(url: str, name: str) -> Iterator[Connection]:
    """A connection to migrate on, held under the service's lock: a file lock beside a SQLite
    file, a session advisory lock taken on this very connection on PostgreSQL."""
    parsed = make_url(url)
    sqlite = parsed.get_backend_name() == "sqlite"
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with contextlib.ExitStack() as stack:
            if sqlite:
                stack.enter_context(_file_lock(parsed.database))
            conn = stack.enter_context(engine.connect())
            if not sqlite:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": lock_key(name)})
                conn.commit()  # a session lock: it outlives this transaction
            try:
                yield conn
            finally:
                if not sqlite:
                    conn.rollback()
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock_key(name)})
                    conn.commit()
    finally:
        engine.dispose()


def upgrade(script_location: Path, url: str, name: str, revision: str = "head") -> None:
    """Apply the migrations under `script_location` to `url` up to `revision`, under the lock;
    a process that waited finds the schema at `revision` and changes nothing."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    with migration_connection(url, name) as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()


def run_env() -> None:
    """The body of each service's Alembic env.py: migrate on the locked connection given by
    `upgrade`, or (Alembic's own command line) on one of its own."""
    config = context.config
    given = config.attributes.get("connection")
    if given is not None:
        _run_on(given)
        return
    engine = engine_from_config(config.get_section(config.config_ini_section) or {},
                                prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run_on(conn)


def _run_on(conn: Connection) -> None:
    context.configure(connection=conn, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
