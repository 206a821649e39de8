"""Idempotency-Key entries in the service's database, so every replica and every restart of a
service answers a replayed POST the same way.

One row per key (scoped by user, method and path): the request's fingerprint, and either the
first answer (status, content type, kept headers, body) or, while the first request runs, the
process running it (`owner`) with a lease that process renews. A row whose lease ran out was
left by a process that died mid-request: the next replay takes it over and runs the request
again (the services' POSTs are safe to run again: Shipyard finds its action by the key,
Promenade's decommission phases start from what is already true). Rows live `ttl` seconds
after their answer; expired rows are deleted lazily, at most once a minute per process.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy import (
    JSON,
    Column,
    Engine,
    Float,
    Index,
    Insert,
    Integer,
    LargeBinary,
    MetaData,
    RowMapping,
    String,
    Table,
    create_engine,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.pool import StaticPool

from common.errors import Conflict, UnprocessableEntity
from common.failurelog import FailureLog

LOG = logging.getLogger(__name__)
HEADER = "Idempotency-Key"
RUNNING, DONE = "running", "done"
PURGE_EVERY = 60.0  # seconds between this process's deletions of expired rows

METADATA = MetaData()
KEYS = Table(
    "idempotency_keys", METADATA,
    Column("scope", String(64), primary_key=True),  # sha256 of user, method, path and key
    Column("fingerprint", String(64), nullable=False),  # sha256 of the request
    Column("state", String(16), nullable=False),  # running | done
    Column("attempt", Integer, nullable=False),  # one more at every takeover
    Column("owner", String(255)),  # the process running it (state running)
    Column("lease_expires", Float),  # the owner renews it while it runs
    Column("created", Float, nullable=False),
    Column("expires", Float, nullable=False),
    Column("status", String(64)),  # the first answer (state done)
    Column("content_type", String(255)),
    Column("headers", JSON),
    Column("body", LargeBinary),
    Index("ix_idempotency_keys_expires", "expires"),
)


@dataclass(frozen=True)
class Saved:
    """The first answer given under a key, replayed as it was."""

    status: str
    content_type: str | None
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class RequestInProgress(Conflict):
    """The first request with this key still runs (in this or another process): retry later."""

    reason, title, retry = "RequestInProgress", "Request in progress", True

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, details={"retry_after": retry_after})
        self.retry_after = retry_after


def scope_of(user: str, method: str, path: str, key: str) -> str:
    """The row's primary key: a digest, so any printable key of up to 255 characters fits."""
    digest = hashlib.sha256()
    for part in (user, method, path, key):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SqlIdempotencyStore:
    """Keys in the `idempotency_keys` table (SQLite or PostgreSQL), shared by every process
    using the database. `begin` → None (run the request; then `finish`) or the first answer;
    422 for another request under the key; 409 RequestInProgress while it runs elsewhere."""

    def __init__(self, engine: Engine, *, ttl: float = 86400.0, lease: float = 30.0,
                 owner: str | None = None, clock: Callable[[], float] = time.time) -> None:
        self.engine, self.ttl, self.lease, self.clock = engine, ttl, lease, clock
        self.owner = owner or default_owner()
        self._running: dict[str, int] = {}  # scope -> attempt, of requests this store runs
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._next_purge = 0.0

    @classmethod
    def from_conf(cls, engine: Engine, conf: cfg.ConfigOpts) -> SqlIdempotencyStore:
        """The store of a service on its database engine, `[api] idempotency_*` applied."""
        return cls(engine, ttl=conf.api.idempotency_ttl, lease=conf.api.idempotency_lease)

    @classmethod
    def in_memory(cls, *, ttl: float = 86400.0, lease: float = 30.0, owner: str | None = None,
                  clock: Callable[[], float] = time.time) -> SqlIdempotencyStore:
        """A store of its own (tests, apps built without a database)."""
        engine = create_engine("sqlite://", poolclass=StaticPool,
                               connect_args={"check_same_thread": False})
        METADATA.create_all(engine)
        return cls(engine, ttl=ttl, lease=lease, owner=owner, clock=clock)

    # -- the request's life ------------------------------------------------------------------
    def begin(self, scope: str, fingerprint: str) -> Saved | None:
        now = self.clock()
        self._purge(now)
        for _ in range(5):
            if self._insert(scope, fingerprint, now):
                return None
            with self.engine.connect() as conn:
                row = conn.execute(select(KEYS).where(KEYS.c.scope == scope)).mappings().first()
            if row is None:
                continue  # deleted meanwhile (forgotten or purged): try to insert again
            lease_left = float(row["lease_expires"] or 0.0) - now
            if row["expires"] < now and (row["state"] == DONE or lease_left <= 0):
                if self._take_over(row, fingerprint, now, "expired"):
                    return None
                continue
            if row["fingerprint"] != fingerprint:
                raise UnprocessableEntity(
                    f"{HEADER} was already used with a different request; use a new key",
                    reason="IdempotencyKeyReused")
            if row["state"] == DONE:
                return Saved(str(row["status"]), row["content_type"], bytes(row["body"] or b""),
                             tuple((str(h), str(v)) for h, v in row["headers"] or []))
            if lease_left > 0:
                raise RequestInProgress(
                    f"A request with this {HEADER} is still running; retry later",
                    max(1, math.ceil(min(lease_left, self.lease))))
            if self._take_over(row, fingerprint, now, "stale"):
                LOG.warning("Idempotency-Key entry of %s left running by %s (lease ran out): "
                            "running the request again", scope[:12], row["owner"])
                return None
        raise RequestInProgress(f"A request with this {HEADER} is being claimed; retry later", 1)

    def finish(self, scope: str, saved: Saved | None) -> None:
        """Keep `saved` as the answer to replay, or (None) forget the key: the request failed
        and may be sent again."""
        with self._lock:
            attempt = self._running.pop(scope, None)
        if attempt is None:
            return
        mine = ((KEYS.c.scope == scope) & (KEYS.c.owner == self.owner)
                & (KEYS.c.attempt == attempt))
        with self.engine.begin() as conn:
            if saved is None:
                conn.execute(delete(KEYS).where(mine))
                return
            conn.execute(update(KEYS).where(mine).values(
                state=DONE, owner=None, lease_expires=None, expires=self.clock() + self.ttl,
                status=saved.status, content_type=saved.content_type,
                headers=[list(h) for h in saved.headers], body=saved.body))

    # -- rows ---------------------------------------------------------------------------------
    def _insert(self, scope: str, fingerprint: str, now: float) -> bool:
        values = dict(scope=scope, fingerprint=fingerprint, state=RUNNING, attempt=1,
                      owner=self.owner, lease_expires=now + self.lease, created=now,
                      expires=now + self.ttl)
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            stmt: Insert = postgresql.insert(KEYS).values(**values).on_conflict_do_nothing()
        elif dialect == "sqlite":
            stmt = sqlite.insert(KEYS).values(**values).on_conflict_do_nothing()
        else:  # pragma: no cover - Berth runs on SQLite and PostgreSQL
            stmt = insert(KEYS).values(**values)
        with self.engine.begin() as conn:  # a row comes back only when this one was inserted
            inserted = conn.execute(stmt.returning(KEYS.c.scope)).first() is not None
        if inserted:
            self._track(scope, 1)
        return inserted

    def _take_over(self, row: RowMapping, fingerprint: str, now: float, why: str) -> bool:
        """Claim a row whose holder is gone (lease ran out) or whose time is over; only one
        process wins (the UPDATE is conditional on the attempt it read)."""
        attempt = int(row["attempt"]) + 1
        values: dict[str, object] = dict(state=RUNNING, attempt=attempt, owner=self.owner,
                                      lease_expires=now + self.lease, status=None,
                                      content_type=None, headers=None, body=None)
        if why == "expired":  # a new request under an old key
            values.update(fingerprint=fingerprint, created=now, expires=now + self.ttl)
        with self.engine.begin() as conn:
            won = conn.execute(update(KEYS).where(
                (KEYS.c.scope == row["scope"]) & (KEYS.c.attempt == row["attempt"]))
                .values(**values)).rowcount == 1
        if won:
            self._track(str(row["scope"]), attempt)
        return won

    def _track(self, scope: str, attempt: int) -> None:
        with self._lock:
            self._running[scope] = attempt
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(target=self._renew_forever, daemon=True,
                                                 name="idempotency-lease")
                self._renewer.start()

    def renew(self) -> int:
        """Extend the lease of every request this store runs; how many rows were renewed."""
        with self._lock:
            running = dict(self._running)
        if not running:
            return 0
        renewed = 0
        with self.engine.begin() as conn:
            for scope, attempt in running.items():
                renewed += conn.execute(update(KEYS).where(
                    (KEYS.c.scope == scope) & (KEYS.c.owner == self.owner)
                    & (KEYS.c.attempt == attempt) & (KEYS.c.state == RUNNING))
                    .values(lease_expires=self.clock() + self.lease)).rowcount
        return renewed

    def _renew_forever(self) -> None:
        failures = FailureLog(LOG, "Renewing Idempotency-Key leases")
        while True:
            time.sleep(max(0.05, self.lease / 3))
            failures.run(self.renew)  # the database away: the next pass tries again

    def _purge(self, now: float) -> None:
        if now < self._next_purge:
            return
        self._next_purge = now + PURGE_EVERY
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(KEYS).where(
                    (KEYS.c.expires < now)
                    & ((KEYS.c.state == DONE) | (KEYS.c.lease_expires < now))))
        except Exception:  # purging is housekeeping; the request goes on
            LOG.warning("Deleting expired Idempotency-Key entries failed", exc_info=True)
