"""PreparedRead answers what SQLAlchemy would, on SQLite (positional parameters) and
PostgreSQL (named ones), and gives its connection back to the pool."""

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, create_engine, func
from sqlalchemy import select as sa_select

from common.prepared import PreparedRead

METADATA = MetaData()
ITEMS = Table("items", METADATA, Column("id", Integer, primary_key=True),
              Column("owner", String(16)), Column("weight", Integer))


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path):
    url = (f"sqlite:///{tmp_path}/items.db" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    engine = create_engine(url)
    METADATA.create_all(engine)
    with engine.begin() as conn:
        conn.execute(ITEMS.insert(), [{"id": 1, "owner": "a", "weight": 3},
                                      {"id": 2, "owner": "a", "weight": 4},
                                      {"id": 3, "owner": "b", "weight": 5}])
    yield engine
    engine.dispose()


def test_a_row_with_parameters_and_literals(engine):
    statement = sa_select(func.count(), func.coalesce(func.sum(ITEMS.c.weight), 0)) \
        .where(ITEMS.c.owner == bindparam("owner"))
    read = PreparedRead(engine, statement)
    with engine.connect() as conn:
        expected = tuple(conn.execute(statement, {"owner": "a"}).one())
    assert read.one(owner="a") == expected == (2, 7)
    assert read.one(owner="nobody") == (0, 0)
    assert engine.pool.checkedout() == 0


def test_no_row_is_none(engine):
    read = PreparedRead(engine, sa_select(ITEMS.c.owner).where(ITEMS.c.id == bindparam("id")))
    assert read.one(id=3) == ("b",)
    assert read.one(id=99) is None
    assert engine.pool.checkedout() == 0


def test_on_a_sqlite_file_each_thread_reads_the_last_commit_on_its_own_connection(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from common.sqlite import tune

    engine = tune(create_engine(f"sqlite:///{tmp_path}/items.db"), busy_timeout=2.5)
    METADATA.create_all(engine)
    with engine.begin() as conn:
        conn.execute(ITEMS.insert(), [{"id": 1, "owner": "a", "weight": 3}])
    read = PreparedRead(engine, sa_select(ITEMS.c.weight).where(ITEMS.c.id == bindparam("id")))
    assert read.one(id=1) == (3,)
    with engine.begin() as conn:  # committed elsewhere: seen at the next read
        conn.execute(ITEMS.update().where(ITEMS.c.id == 1).values(weight=4))
    assert read.one(id=1) == (4,)
    writer = engine.raw_connection()  # a writer in the middle of its transaction
    try:
        writer.isolation_level = None
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE items SET weight = 5 WHERE id = 1")
        with ThreadPoolExecutor(4) as pool:  # neither waits for it nor sees its change
            assert list(pool.map(lambda _: read.one(id=1), range(8))) == [(4,)] * 8
        writer.execute("COMMIT")
    finally:
        writer.close()
    assert read.one(id=1) == (5,)
    assert read._thread_connection().execute("PRAGMA busy_timeout").fetchone() == (2500,)
    assert engine.pool.checkedout() == 0
    engine.dispose()


def test_on_a_sqlite_file_a_read_runs_again_only_after_a_commit_of_any_process(tmp_path):
    """Unchanged data: the thread's last row for the same parameters, the query not run.
    A commit elsewhere (another process here), or other parameters: the query again."""
    import subprocess
    import sys

    from common.sqlite import tune

    path = tmp_path / "items.db"
    engine = tune(create_engine(f"sqlite:///{path}"), busy_timeout=2.5)
    METADATA.create_all(engine)
    with engine.begin() as conn:
        conn.execute(ITEMS.insert(), [{"id": 1, "owner": "a", "weight": 3}])
    read = PreparedRead(engine, sa_select(func.count(), func.sum(ITEMS.c.weight))
                        .where(ITEMS.c.owner == bindparam("owner")))
    queries: list[str] = []
    read._thread_connection().set_trace_callback(queries.append)

    def counted() -> int:
        return sum(1 for q in queries if not q.startswith("PRAGMA"))

    assert [read.one(owner="a") for _ in range(3)] == [(1, 3)] * 3 and counted() == 1
    assert read.one(owner="b") == (0, None) and counted() == 2
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute(\"INSERT INTO items VALUES (2, 'b', 4)\"); c.commit()")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
    assert read.one(owner="b") == (1, 4) and counted() == 3
    assert read.one(owner="b") == (1, 4) and counted() == 3
    with engine.begin() as conn:  # this process, another connection
        conn.execute(ITEMS.update().where(ITEMS.c.id == 2).values(weight=6))
    assert read.one(owner="b") == (1, 6) and counted() == 4
    engine.dispose()
