"""The tamper-evident audit log Shipyard and Drydock share: every state change is appended in the
transaction that makes it, hash-chained per stream, and can be verified from the database alone.

Each entry of a stream carries `seq` (1, 2, ...) and `hash = sha256(prev_hash + payload)`, where
`payload` is the canonical JSON of the entry (stream, seq, time, user, on whose behalf, object,
change, old and new state) and the first entry's `prev_hash` is 64 zeros. The stream's head row
(`audit_heads`) holds the last seq and hash; an append locks it (SELECT ... FOR UPDATE on
PostgreSQL; on SQLite the append's first statement is a write, which takes the database's write
lock), so concurrent writers in any number of processes extend one chain and never fork it.
Editing a payload, deleting, inserting or re-ordering rows breaks a link that `verify` names.
Callers append after the change's own writes (row locks first, the head's last), so two
transactions never wait for each other's locks in opposite order.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from sqlalchemy import (
    Column,
    Connection,
    Float,
    Index,
    Integer,
    MetaData,
    Select,
    String,
    Table,
    Text,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import BindParameter

from common.context import RequestContext
from common.jsontypes import JSONObject

GENESIS = "0" * 64
MAX_LIMIT = 1000

METADATA = MetaData()
HEADS = Table(
    "audit_heads", METADATA,
    Column("stream", String(128), primary_key=True),
    Column("seq", Integer, nullable=False),  # the last entry's seq (0: none yet)
    Column("hash", String(64), nullable=False),  # the last entry's hash (GENESIS: none)
)
ENTRIES = Table(
    "audit_entries", METADATA,
    Column("stream", String(128), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("at", Float, nullable=False),  # epoch seconds (also inside the payload)
    Column("object", String(255), nullable=False),  # e.g. action/01J..., node/node03
    Column("payload", Text, nullable=False),  # canonical JSON of the entry
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Index("ix_audit_entries_at", "at"),
    Index("ix_audit_entries_object", "object"),
)


@dataclass(frozen=True)
class Actor:
    """Who made a change: the authenticated user of the request (never a header a client
    chose), or a service's own identity on behalf of the user who started the work."""

    user: str
    on_behalf_of: str | None = None


SYSTEM = Actor("system")
current_actor: contextvars.ContextVar[Actor | None] = contextvars.ContextVar(
    "audit_actor", default=None)


def request_actor(ctx: RequestContext) -> Actor:
    """The request's authenticated user; `on_behalf_of` only as a service-role caller vouched
    for it (common.context.acting_user), never from a plain client's header."""
    return Actor(ctx.user or "anonymous", ctx.on_behalf_of)


def worker_actor(service: str, started_by: str | None) -> Actor:
    """A worker's changes: the service itself, on behalf of who started the action or task."""
    return Actor(f"system:{service}", started_by)


@contextlib.contextmanager
def acting(actor: Actor) -> Iterator[Actor]:
    """Attribute the changes made in this block (this thread or task) to `actor`."""
    token = current_actor.set(actor)
    try:
        yield actor
    finally:
        current_actor.reset(token)


def canonical(value: object) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def link_hash(prev_hash: str, payload: str) -> str:
    return hashlib.sha256((prev_hash + payload).encode()).hexdigest()


def append(session: Session | Connection, stream: str, obj: str, change: str, old: object,
           new: object, *, at: float, actor: Actor | None = None,
           detail: Mapping[str, object] | None = None) -> int:
    """Append one entry to `stream` in the caller's transaction; its seq."""
    who = actor or current_actor.get() or SYSTEM
    return append_many(session, [Pending(stream, obj, change, old, new, at, who, detail)])[0]


@dataclass(frozen=True)
class Pending:
    """One entry to append with `append_many` (what `append` takes, `actor` resolved)."""

    stream: str
    obj: str
    change: str
    old: object
    new: object
    at: float
    actor: Actor
    detail: Mapping[str, object] | None = None


def append_many(session: Session | Connection, pending: list[Pending], *,
                write_locked: bool = False) -> list[int]:
    """Append `pending` in order, in the caller's transaction: the same chain as one `append`
    each, in four statements whatever their number (heads created if missing, heads read and
    locked, entries inserted, heads moved), or three when `write_locked` (the transaction
    already holds SQLite's write lock: BEGIN IMMEDIATE) and every head exists. The seq of
    each entry, in order."""
    if not pending:
        return []
    dialect = session.get_bind().dialect.name if isinstance(session, Session) \
        else session.dialect.name
    ins = postgresql.insert(HEADS) if dialect == "postgresql" else sqlite.insert(HEADS)
    names = sorted({p.stream for p in pending})
    heads = _heads(session, names) if write_locked or dialect == "postgresql" else {}
    if len(heads) < len(names):  # a write first: on SQLite it takes the write lock
        session.execute(ins.on_conflict_do_nothing(index_elements=["stream"]),
                        [{"stream": n, "seq": 0, "hash": GENESIS} for n in names])
        heads = _heads(session, names)
    rows: list[dict[str, object]] = []
    seqs: list[int] = []
    for p in pending:
        seq, prev = heads[p.stream]
        seq += 1
        seqs.append(seq)
        entry: dict[str, object] = {"stream": p.stream, "seq": seq, "at": p.at,
                                    "user": p.actor.user, "on_behalf_of": p.actor.on_behalf_of,
                                    "object": p.obj, "change": p.change, "old": p.old,
                                    "new": p.new}
        if p.detail:
            entry["detail"] = p.detail
        payload = canonical(entry)
        digest = link_hash(prev, payload)
        rows.append({"stream": p.stream, "seq": seq, "at": p.at, "object": p.obj[:255],
                     "payload": payload, "prev_hash": prev, "hash": digest})
        heads[p.stream] = (seq, digest)
    # executemany (one row: execute): one statement, compiled once per process (a multi-row
    # VALUES is not cached)
    session.execute(_ADD_ENTRIES, rows if len(rows) > 1 else rows[0])
    moves = [{"s": n, "q": heads[n][0], "h": heads[n][1]} for n in names]
    session.execute(_MOVE_HEAD, moves if len(moves) > 1 else moves[0])
    return seqs


_ADD_ENTRIES = insert(ENTRIES)  # built once: no new statement's cache key per append
_MOVE_HEAD = update(HEADS).where(HEADS.c.stream == bindparam("s")).values(
    seq=bindparam("q"), hash=bindparam("h"))


@functools.cache
def _heads_query(count: int) -> Select[str, int, str]:
    """The heads of `count` streams (`:s0`, `:s1`, ...), locked: one statement per count,
    built once (an expanding IN is rendered again on every execution)."""
    names: list[BindParameter[str]] = [bindparam(f"s{i}") for i in range(count)]
    return select(HEADS.c.stream, HEADS.c.seq, HEADS.c.hash).where(
        HEADS.c.stream.in_(names)).order_by(HEADS.c.stream).with_for_update()


def _heads(session: Session | Connection, names: list[str]) -> dict[str, tuple[int, str]]:
    """The heads of these streams that exist, locked (FOR UPDATE on PostgreSQL)."""
    rows = session.execute(_heads_query(len(names)), {f"s{i}": n for i, n in enumerate(names)})
    return {str(s): (int(q), str(h)) for s, q, h in rows}


# -- verification ------------------------------------------------------------------------------
@dataclass(frozen=True)
class BrokenLink:
    """The first link that does not hold: where, what was expected and what was found."""

    stream: str
    seq: int
    problem: str
    expected: str
    found: str

    def message(self) -> str:
        return (f"stream {self.stream} seq {self.seq}: {self.problem} (expected "
                f"{self.expected}, found {self.found})")

    def view(self) -> dict[str, str | int]:
        return {"stream": self.stream, "seq": self.seq, "problem": self.problem,
                "expected": self.expected, "found": self.found}


class Chain(TypedDict):
    """One stream's chain once verified: how many entries, the head's hash."""

    entries: int
    head: str


@dataclass(frozen=True)
class Verification:
    chains: dict[str, Chain] = field(default_factory=dict)  # stream -> entries, head
    broken: BrokenLink | None = None

    @property
    def ok(self) -> bool:
        return self.broken is None


def verify(conn: Session | Connection, *, batch: int = 2000) -> Verification:
    """Walk every stream from its first entry: each row's position, payload, previous hash and
    hash, then the head. Stops at the first broken link."""
    heads = {str(s): (int(q), str(h)) for s, q, h in conn.execute(
        select(HEADS.c.stream, HEADS.c.seq, HEADS.c.hash))}
    streams = sorted(set(heads) | {str(s) for s in conn.execute(
        select(ENTRIES.c.stream).distinct()).scalars()})
    chains: dict[str, Chain] = {}
    for stream in streams:
        count, last, broken = _walk(conn, stream, batch)
        if broken is None:
            broken = _check_head(stream, heads.get(stream), count, last)
        if broken is not None:
            return Verification(chains, broken)
        chains[stream] = {"entries": count, "head": last}
    return Verification(chains)


def _walk(conn: Session | Connection, stream: str,
          batch: int) -> tuple[int, str, BrokenLink | None]:
    expected_seq, prev, after = 1, GENESIS, 0
    while True:
        rows = conn.execute(select(ENTRIES.c.seq, ENTRIES.c.payload, ENTRIES.c.prev_hash,
                                   ENTRIES.c.hash)
                            .where(ENTRIES.c.stream == stream, ENTRIES.c.seq > after)
                            .order_by(ENTRIES.c.seq).limit(batch)).all()
        for seq, payload, prev_hash, digest in rows:
            broken = _check_row(stream, expected_seq, prev, int(seq), str(payload),
                                str(prev_hash), str(digest))
            if broken is not None:
                return expected_seq - 1, prev, broken
            prev, expected_seq, after = str(digest), expected_seq + 1, int(seq)
        if len(rows) < batch:
            return expected_seq - 1, prev, None


def _check_row(stream: str, want_seq: int, prev: str, seq: int, payload: str,
               prev_hash: str, digest: str) -> BrokenLink | None:
    if seq != want_seq:
        return BrokenLink(stream, want_seq, f"entry {want_seq} is missing (next is {seq})",
                          prev, prev_hash)
    if prev_hash != prev:
        return BrokenLink(stream, seq, "previous hash does not match the entry before",
                          prev, prev_hash)
    recomputed = link_hash(prev, payload)
    if recomputed != digest:
        return BrokenLink(stream, seq, "hash does not match the entry's content",
                          recomputed, digest)
    try:
        named = json.loads(payload)
        where = (named.get("stream"), named.get("seq"))
    except (ValueError, AttributeError):
        where = (None, None)
    if where != (stream, seq):
        return BrokenLink(stream, seq, "entry was moved from another position",
                          f"{stream}#{seq}", f"{where[0]}#{where[1]}")
    return None


def _check_head(stream: str, head: tuple[int, str] | None, count: int,
                last: str) -> BrokenLink | None:
    if head is None:
        return BrokenLink(stream, count, "the stream has no head row", last, "(none)")
    seq, digest = head
    if seq != count or digest != last:
        problem = (f"entries after {count} are missing (head is at {seq})" if seq > count
                   else f"head is at {seq} but the chain holds {count} entries")
        return BrokenLink(stream, max(seq, count), problem, digest, last)
    return None


# -- reading -----------------------------------------------------------------------------------
def entries(conn: Session | Connection, *, stream: str | None = None,
            since: float | None = None, limit: int = 100) -> list[JSONObject]:
    """Entries in chain order (by stream, then seq), at or after `since` (epoch seconds),
    at most `limit`."""
    query = select(ENTRIES.c.payload, ENTRIES.c.prev_hash, ENTRIES.c.hash)
    if stream:
        query = query.where(ENTRIES.c.stream == stream)
    if since is not None:
        query = query.where(ENTRIES.c.at >= since)
    query = query.order_by(ENTRIES.c.stream, ENTRIES.c.seq)
    out: list[JSONObject] = []
    for payload, prev_hash, digest in conn.execute(query.limit(max(1, min(limit, MAX_LIMIT)))):
        try:
            view = json.loads(payload)
        except ValueError:
            view = {"payload": payload}
        out.append({**view, "prev_hash": prev_hash, "hash": digest})
    return out


def streams(conn: Session | Connection) -> dict[str, int]:
    """Every stream and its entry count (from the heads)."""
    return {str(s): int(q) for s, q in conn.execute(
        select(HEADS.c.stream, HEADS.c.seq).order_by(HEADS.c.stream))}


def entry_count(conn: Session | Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(ENTRIES)).scalar_one())
