"""Migrations started by several processes at once run one at a time and all succeed."""

import multiprocessing

import sqlalchemy

from shipyard_api import db


def _upgrade(url):
    db.upgrade(url)


def _tables(url):
    engine = sqlalchemy.create_engine(url)
    try:
        return set(sqlalchemy.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _race(url):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_upgrade, args=(url,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    return [p.exitcode for p in procs]


def test_concurrent_upgrades_of_a_fresh_sqlite_file(tmp_path):
    url = f"sqlite:///{tmp_path}/shipyard.db"
    assert _race(url) == [0, 0, 0, 0]
    assert "alembic_version" in _tables(url)


def test_concurrent_upgrades_of_a_fresh_postgres_database(postgres_url):
    assert _race(postgres_url) == [0, 0, 0, 0]
    assert "alembic_version" in _tables(postgres_url)
