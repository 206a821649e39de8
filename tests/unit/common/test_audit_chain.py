"""The audit log's hash chains: tampering with rows is found, concurrent writers (threads and
processes, SQLite and PostgreSQL) extend one chain per stream."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text

from common import audit
from common.audit import ENTRIES, Actor, acting, append, verify

ROOT = Path(__file__).resolve().parents[3]


def _shipyard(url: str) -> Engine:
    from shipyard_api.db import make_engine, upgrade

    upgrade(url)
    return make_engine(url)


def _drydock(url: str) -> Engine:
    from drydock_api.db import make_engine, upgrade

    upgrade(url)
    return make_engine(url)


@pytest.fixture(params=["sqlite-shipyard", "sqlite-drydock", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_url")
        eng = _shipyard(url)
    elif request.param == "sqlite-shipyard":
        eng = _shipyard(f"sqlite:///{tmp_path}/shipyard.db")
    else:
        eng = _drydock(f"sqlite:///{tmp_path}/drydock.db")
    yield eng
    eng.dispose()


def _fill(engine: Engine, stream: str = "test.things", n: int = 5) -> None:
    for i in range(n):
        with engine.begin() as conn:
            append(conn, stream, f"thing/{i}", "state", "old", f"new{i}", at=1000.0 + i,
                   actor=Actor("alice"))


def _check(engine: Engine) -> audit.Verification:
    with engine.connect() as conn:
        return verify(conn)


def test_an_untouched_log_verifies_with_counts_per_chain(engine: Engine) -> None:
    _fill(engine, "a.one", 3)
    _fill(engine, "a.two", 2)
    result = _check(engine)
    assert result.ok, result.broken
    assert {s: c["entries"] for s, c in result.chains.items()} == {"a.one": 3, "a.two": 2}
    with engine.connect() as conn:
        rows = audit.entries(conn, stream="a.one")
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert rows[0]["prev_hash"] == audit.GENESIS and rows[1]["prev_hash"] == rows[0]["hash"]
    assert rows[2]["user"] == "alice" and rows[2]["new"] == "new2"


def test_editing_an_entrys_payload_is_found(engine: Engine) -> None:
    _fill(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE audit_entries SET payload = replace(payload, 'alice', "
                          "'mallory') WHERE seq = 3"))
    broken = _check(engine).broken
    assert broken is not None
    assert (broken.stream, broken.seq) == ("test.things", 3)
    with engine.connect() as conn:
        stored = conn.execute(select(ENTRIES.c.hash).where(ENTRIES.c.seq == 3)).scalar_one()
    assert broken.found == stored and broken.expected != stored
    assert "content" in broken.problem


def test_deleting_an_entry_is_found(engine: Engine) -> None:
    _fill(engine)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_entries WHERE seq = 2"))
    broken = _check(engine).broken
    assert broken is not None and (broken.stream, broken.seq) == ("test.things", 2)
    assert "missing" in broken.problem


def test_deleting_the_last_entries_is_found_by_the_head(engine: Engine) -> None:
    _fill(engine)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_entries WHERE seq >= 4"))
    broken = _check(engine).broken
    assert broken is not None and broken.stream == "test.things" and broken.seq == 5
    assert "missing" in broken.problem


def test_reordering_entries_is_found(engine: Engine) -> None:
    _fill(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE audit_entries SET seq = 100 WHERE seq = 2"))
        conn.execute(text("UPDATE audit_entries SET seq = 2 WHERE seq = 3"))
        conn.execute(text("UPDATE audit_entries SET seq = 3 WHERE seq = 100"))
    broken = _check(engine).broken
    assert broken is not None and (broken.stream, broken.seq) == ("test.things", 2)


def test_the_actor_of_the_context_is_recorded(engine: Engine) -> None:
    with acting(Actor("system:shipyard", "bob")), engine.begin() as conn:
        append(conn, "s", "o/1", "state", None, "x", at=1.0)
    with engine.connect() as conn:
        (row,) = audit.entries(conn)
    assert (row["user"], row["on_behalf_of"]) == ("system:shipyard", "bob")


def _hammer(engine: Engine, threads: int, each: int) -> None:
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(each):
                with engine.begin() as conn:
                    # a state change first, as the stores do, then its entry
                    append(conn, "race", f"t{t}/{i}", "state", None, i, at=float(i))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors


def _one_chain(engine: Engine, total: int) -> None:
    result = _check(engine)
    assert result.ok, result.broken
    assert result.chains["race"]["entries"] == total
    with engine.connect() as conn:
        seqs = conn.execute(select(ENTRIES.c.seq).where(ENTRIES.c.stream == "race")
                            .order_by(ENTRIES.c.seq)).scalars().all()
    assert list(seqs) == list(range(1, total + 1))


def test_concurrent_threads_extend_one_chain(engine: Engine) -> None:
    _hammer(engine, 8, 25)
    _one_chain(engine, 200)


SCRIPT = """
import sys
from sqlalchemy import create_engine
from {module} import make_engine
from common.audit import append
engine = make_engine(sys.argv[1])
for i in range(int(sys.argv[2])):
    with engine.begin() as conn:
        append(conn, "race", "p/%d" % i, "state", None, i, at=float(i))
"""


def _processes(engine: Engine, url: str, module: str) -> None:
    code = SCRIPT.format(module=module)
    procs = [subprocess.Popen([sys.executable, "-c", code, url, "60"], cwd=ROOT)
             for _ in range(2)]
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert codes == [0, 0]
    _hammer(engine, 2, 10)  # and this process's threads beside them, after
    _one_chain(engine, 140)


@pytest.mark.parametrize("kind", ["shipyard", "drydock"])
def test_two_processes_extend_one_chain_on_sqlite(tmp_path: Path, kind: str) -> None:
    url = f"sqlite:///{tmp_path}/{kind}.db"
    make: Callable[[str], Engine] = _shipyard if kind == "shipyard" else _drydock
    engine = make(url)
    _processes(engine, url, f"{kind}_api.db")


def test_two_processes_extend_one_chain_on_postgresql(postgres_url: str) -> None:
    engine = _drydock(postgres_url)
    _processes(engine, postgres_url, "drydock_api.db")


# -- several entries of one transaction appended at once (append_many) --------------------------
def _pending(stream: str, i: int) -> audit.Pending:
    return audit.Pending(stream, f"thing/{i}", "state", None, f"new{i}", 2000.0 + i,
                         Actor("alice"), {"n": i} if i % 2 else None)


def _batch(engine: Engine, *, locked: bool) -> None:
    with engine.begin() as conn:  # the first entries of both streams: heads created
        audit.append_many(conn, [_pending("b.one", 0), _pending("b.two", 1),
                                 _pending("b.one", 2)], write_locked=locked)
    with engine.begin() as conn:
        append(conn, "b.one", "thing/3", "state", None, "new3", at=2003.0,
               actor=Actor("alice"), detail={"n": 3})
    with engine.begin() as conn:
        audit.append_many(conn, [_pending("b.two" if i % 3 else "b.one", i)
                                 for i in range(4, 134)], write_locked=locked)


def _one_by_one(engine: Engine) -> None:
    with engine.begin() as conn:
        for p in [_pending("b.one", 0), _pending("b.two", 1), _pending("b.one", 2)]:
            append(conn, p.stream, p.obj, p.change, p.old, p.new, at=p.at, actor=p.actor,
                   detail=p.detail)
    with engine.begin() as conn:
        append(conn, "b.one", "thing/3", "state", None, "new3", at=2003.0,
               actor=Actor("alice"), detail={"n": 3})
    with engine.begin() as conn:
        for i in range(4, 134):
            p = _pending("b.two" if i % 3 else "b.one", i)
            append(conn, p.stream, p.obj, p.change, p.old, p.new, at=p.at, actor=p.actor,
                   detail=p.detail)


def _rows(engine: Engine) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            select(ENTRIES.c.stream, ENTRIES.c.seq, ENTRIES.c.payload, ENTRIES.c.prev_hash,
                   ENTRIES.c.hash).order_by(ENTRIES.c.stream, ENTRIES.c.seq))]


@pytest.mark.parametrize("locked", [False, True])
def test_entries_appended_in_one_batch_are_the_chain_one_append_each_makes(
        tmp_path: Path, locked: bool) -> None:
    batched = _drydock(f"sqlite:///{tmp_path}/batched.db")
    single = _drydock(f"sqlite:///{tmp_path}/single.db")
    _batch(batched, locked=locked)
    _one_by_one(single)
    result = _check(batched)
    assert result.ok, result.broken
    assert {s: c["entries"] for s, c in result.chains.items()} == {"b.one": 46, "b.two": 88}
    assert _rows(batched) == _rows(single)  # same seqs, payloads and links
    with batched.begin() as conn:  # and tampering inside a batch is still found
        conn.execute(text("UPDATE audit_entries SET payload = replace(payload, 'new5', 'x5') "
                          "WHERE stream = 'b.two' AND seq = 3"))
    broken = _check(batched).broken
    assert broken is not None and (broken.stream, broken.seq) == ("b.two", 3)


def test_batches_and_single_appends_of_concurrent_writers_extend_one_chain(
        engine: Engine) -> None:
    locked = engine.dialect.name == "postgresql" or "drydock" in str(engine.url)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(10):
                with engine.begin() as conn:
                    if i % 2:
                        append(conn, "race", f"t{t}/{i}", "state", None, i, at=float(i))
                    else:
                        audit.append_many(conn, [audit.Pending(
                            "race", f"t{t}/{i}/{k}", "state", None, k, float(i),
                            Actor("bob")) for k in range(3)], write_locked=locked)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors
    _one_chain(engine, 6 * (5 * 1 + 5 * 3))
