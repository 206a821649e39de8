"""Every service migrates through common.migrate: processes started at once on a fresh
database (SQLite file or PostgreSQL) all succeed, one at a time, and leave the schema at head
once; a migration waits while another holds the service's lock."""

import importlib
import multiprocessing
import time

import pytest
import sqlalchemy
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from common import migrate

SERVICES = ["shipyard", "drydock", "promenade"]


def _db(service):
    return importlib.import_module(f"{service}_api.db")


def _upgrade(service, url):
    _db(service).upgrade(url)


def _head(service):
    cfg = Config()
    cfg.set_main_option("script_location", str(_db(service).MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


def _versions(url):
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(sqlalchemy.text(
                "SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


def _race(service, url, count=2):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_upgrade, args=(service, url)) for _ in range(count)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    return [p.exitcode for p in procs]


@pytest.mark.parametrize("service", SERVICES)
def test_concurrent_upgrades_of_a_fresh_sqlite_file(tmp_path, service):
    url = f"sqlite:///{tmp_path}/{service}.db"
    assert _race(service, url) == [0, 0]
    assert _versions(url) == [_head(service)]


@pytest.mark.parametrize("service", SERVICES)
def test_concurrent_upgrades_of_a_fresh_postgres_database(postgres_url, service):
    assert _race(service, postgres_url) == [0, 0]
    assert _versions(postgres_url) == [_head(service)]


def _held_lock_delays_upgrade(url, service):
    ctx = multiprocessing.get_context("spawn")
    with migrate.migration_connection(url, service):
        child = ctx.Process(target=_upgrade, args=(service, url))
        child.start()
        time.sleep(1.5)
        assert child.is_alive()  # waiting for the lock, nothing migrated yet
        assert "alembic_version" not in sqlalchemy.inspect(
            sqlalchemy.create_engine(url)).get_table_names()
    child.join(120)
    assert child.exitcode == 0
    assert _versions(url) == [_head(service)]


def test_a_held_lock_delays_another_process_sqlite(tmp_path):
    _held_lock_delays_upgrade(f"sqlite:///{tmp_path}/drydock.db", "drydock")


def test_a_held_lock_delays_another_process_postgres(postgres_url):
    _held_lock_delays_upgrade(postgres_url, "promenade")


def test_alembic_own_command_line_path_migrates_without_the_lock(tmp_path):
    url = f"sqlite:///{tmp_path}/shipyard.db"
    cfg = Config()
    cfg.set_main_option("script_location", str(_db("shipyard").MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url)
    command.upgrade(cfg, "head")
    assert _versions(url) == [_head("shipyard")]
