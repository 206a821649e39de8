"""A read compiled once and run straight on a pooled DBAPI connection, for the freshness
checks that cached response bodies make on every request (there SQLAlchemy's execution layer
costs more than the query itself)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler


class PreparedRead:
    """`one(**params)`: the first row of `statement`, or None. No ORM, no type processing: the
    selected columns must be plain numbers or strings."""

    def __init__(self, engine: Engine, statement: ClauseElement) -> None:
        self._engine = engine
        compiled = statement.compile(dialect=engine.dialect)
        assert isinstance(compiled, SQLCompiler)
        self._compiled = compiled
        self._sql = str(compiled)

    def one(self, **params: object) -> tuple[Any, ...] | None:
        bound = self._compiled.construct_params(params) or {}
        args: Mapping[str, object] | tuple[object, ...] = bound
        if self._compiled.positional:
            args = tuple(bound[name] for name in self._compiled.positiontup or ())
        conn = self._engine.raw_connection()
        try:
            cursor = conn.cursor()
            try:
                cursor.execute(self._sql, args)
                row = cursor.fetchone()
            finally:
                cursor.close()
        finally:
            conn.close()  # back to the pool, which ends the read transaction
        return None if row is None else tuple(row)
