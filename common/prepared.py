"""A read compiled once and run straight on a DBAPI connection, for the freshness checks that
cached response bodies make on every request (there SQLAlchemy's execution layer, and even its
pool's checkout and reset, cost more than the query itself)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler


class PreparedRead:
    """`one(**params)`: the first row of `statement`, or None. No ORM, no type processing: the
    selected columns must be plain numbers or strings.

    On a SQLite file each thread reads on a connection of its own, made once by the engine
    (its settings: WAL, busy timeout) and detached from its pool, in autocommit: each read
    sees the last commit and, in WAL mode, never waits for a writer. There a read first asks
    the connection's `PRAGMA data_version`, which changes when any other connection, of any
    process, has committed since: unchanged, the row this thread read last with the same
    parameters is the answer, and the query (a scan, for an aggregate) is not run again. On
    other databases each read borrows a pooled connection (one held per thread would pin the
    pool's)."""

    def __init__(self, engine: Engine, statement: ClauseElement) -> None:
        self._engine = engine
        compiled = statement.compile(dialect=engine.dialect)
        assert isinstance(compiled, SQLCompiler)
        self._compiled = compiled
        self._sql = str(compiled)
        self._own: threading.local | None = None
        if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
            self._own = threading.local()

    def one(self, **params: object) -> tuple[Any, ...] | None:
        bound = self._compiled.construct_params(params) or {}
        args: Mapping[str, object] | tuple[object, ...] = bound
        if self._compiled.positional:
            args = tuple(bound[name] for name in self._compiled.positiontup or ())
        if self._own is not None:
            return self._unless_unchanged(args)
        conn = self._engine.raw_connection()
        try:
            return self._read(conn, args)
        finally:
            conn.close()  # back to the pool, which ends the read transaction

    def _read(self, conn: Any, args: Mapping[str, object] | tuple[object, ...]
              ) -> tuple[Any, ...] | None:
        cursor = conn.cursor()
        try:
            cursor.execute(self._sql, args)
            row = cursor.fetchone()
        finally:
            cursor.close()
        return None if row is None else tuple(row)

    def _unless_unchanged(self, args: Mapping[str, object] | tuple[object, ...]
                          ) -> tuple[Any, ...] | None:
        """This thread's last row for `args` while nothing was committed since it was read
        (this connection never writes, so each commit changes its data_version); else a read."""
        assert self._own is not None
        conn = self._thread_connection()
        cursor = conn.cursor()
        try:
            version = cursor.execute("PRAGMA data_version").fetchone()[0]
        finally:
            cursor.close()
        last: tuple[object, object, tuple[Any, ...] | None] | None = getattr(
            self._own, "last", None)
        if last is not None and last[0] == version and last[1] == args:
            return last[2]
        row = self._read(conn, args)
        self._own.last = (version, args, row)
        return row

    def _thread_connection(self) -> DBAPIConnection:
        """This thread's connection: made by the engine's pool (its connect settings applied)
        and detached from it, so it is no pooled connection's and is never reset."""
        assert self._own is not None
        conn: DBAPIConnection | None = getattr(self._own, "conn", None)
        if conn is None:
            made = self._engine.raw_connection()
            made.detach()
            conn = made.dbapi_connection
            assert conn is not None
            conn.isolation_level = None  # autocommit: no read transaction is left open
            self._own.made, self._own.conn = made, conn
        return conn
