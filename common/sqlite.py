"""The SQLite settings the three services share: WAL (readers never wait for the writer,
API and worker processes share the file), a busy timeout, and `synchronous=NORMAL`.

NORMAL is SQLite's setting for WAL: a commit is written to the WAL but not synced to disk at
each commit, only at checkpoints. A process killed at any point (SIGKILL, OOM) loses no
committed transaction, since the WAL is in the operating system's cache; a power loss or a
kernel crash of the host may roll back the last commits before the checkpoint, never leaving
the database inconsistent. FULL synced every commit: on a disk the site's etcd members also
sync to, that was milliseconds on each step's start and end. A deployment that must keep
every commit through a power loss runs on PostgreSQL (docs/operations/backups.md)."""

from __future__ import annotations

from sqlalchemy import Engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection


def tune(engine: Engine, *, busy_timeout: float, autocommit: bool = False) -> Engine:
    """Set the shared pragmas on each new connection of `engine` (a SQLite engine).
    `autocommit` leaves transactions to the engine's own `begin` listener (pysqlite opens
    none itself), as Drydock's BEGIN IMMEDIATE needs."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: DBAPIConnection, _record: object) -> None:
        if autocommit:
            dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    return engine
