"""`berth db upgrade`: Shipyard's, Drydock's and Promenade's migrations from an empty database
and from every earlier revision to head, on SQLite and PostgreSQL; bad arguments change
nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import MetaData, create_engine, inspect

from berth_launcher.dbcli import current_revision, upgrader
from berth_launcher.up import main

SERVICES = ("shipyard", "drydock", "promenade")


def script_dir(service: str) -> ScriptDirectory:
    if service == "shipyard":
        from shipyard_api.db import MIGRATIONS
    elif service == "promenade":
        from promenade_api.db import MIGRATIONS
    else:
        from drydock_api.db import MIGRATIONS
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg)


def model_metadata(service: str) -> MetaData:
    if service == "shipyard":
        import shipyard_api.documents.models  # noqa: F401
        import shipyard_api.workflow.models  # noqa: F401
        from shipyard_api.db import Base as ShipyardBase

        return ShipyardBase.metadata
    if service == "promenade":
        from common.idempotency_store import METADATA

        return METADATA
    from drydock_api.db.models import Base as DrydockBase

    return DrydockBase.metadata


def revisions(service: str) -> list[str | None]:
    """None (the empty database) then every revision, oldest first."""
    walk = [r.revision for r in script_dir(service).walk_revisions("base", "heads")]
    return [None, *reversed(walk)]


def assert_schema_matches_models(url: str, service: str) -> None:
    engine = create_engine(url)
    try:
        found = inspect(engine)
        tables = set(found.get_table_names())
        for table in model_metadata(service).sorted_tables:
            assert table.name in tables, f"{service}: table {table.name} missing"
            columns = {c["name"] for c in found.get_columns(table.name)}
            assert {c.name for c in table.columns} <= columns, f"{service}: {table.name}"
            indexes = {i["name"] for i in found.get_indexes(table.name)}
            assert {i.name for i in table.indexes} <= indexes, f"{service}: {table.name}"
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def fresh_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest, tag: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'{tag}.db'}"
    server: str = request.getfixturevalue("postgres_server")
    from berth_launcher.pgcluster import PgCluster

    cluster = PgCluster(tmp_path, int(server.rsplit(":", 1)[1]))
    return cluster.create_database(f"up_{tag}_{tmp_path.name[-12:]}".lower().replace("-", "_"))


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["db", "upgrade", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("service", SERVICES)
def test_every_earlier_revision_upgrades_to_head(service: str, backend: str, tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:
    head = script_dir(service).get_current_head()
    for index, start in enumerate(revisions(service)):
        url = fresh_url(backend, tmp_path, request, f"{service}{index}")
        if start is not None:
            upgrader(service)(url, start)
        assert current_revision(url) == start
        code, output = run_cli("--service", service, "--url", url)
        assert code == 0, output
        assert f"{start or '<empty>'} -> {head}" in output
        assert current_revision(url) == head
        assert_schema_matches_models(url, service)
        code, output = run_cli("--service", service, "--url", url)  # at head: nothing to do
        assert code == 0 and f"{head} -> {head}" in output


def test_both_services_upgrade_from_the_configs_berth_up_wrote(tmp_path: Path) -> None:
    for service in SERVICES:
        (tmp_path / f"{service}.conf").write_text(
            f"[database]\nconnection = sqlite:///{tmp_path / service}.db\n")
    code, output = run_cli("--dir", str(tmp_path))
    assert code == 0, output
    for service in SERVICES:
        assert current_revision(f"sqlite:///{tmp_path / service}.db") == \
            script_dir(service).get_current_head()
        assert output.count(f"{service}: ") == 1


def test_config_file_names_the_database(tmp_path: Path) -> None:
    conf = tmp_path / "drydock.conf"
    conf.write_text(f"[auth]\nstrategy = token\n[database]\nconnection = "
                    f"sqlite:///{tmp_path}/dd.db\n")
    code, output = run_cli("--service", "drydock", "--config-file", str(conf))
    assert code == 0, output
    assert current_revision(f"sqlite:///{tmp_path}/dd.db") == \
        script_dir("drydock").get_current_head()


def test_bad_arguments_are_all_reported_and_create_nothing(tmp_path: Path) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text("[database]\nconnection = sqlite:///x.db\n")
    db = tmp_path / "a.db"
    code, output = run_cli("--url", f"sqlite:///{db}", "--config-file", str(conf))
    assert code == 2
    assert "not both" in output and "--service shipyard" in output
    assert not db.exists()
    code, output = run_cli("--service", "shipyard", "--url", "not a url")
    assert code == 2 and "not a database URL" in output
    code, output = run_cli("--dir", str(tmp_path / "nowhere"))
    assert code == 1 and "berth up" in output
    (tmp_path / "empty.conf").write_text("[auth]\nstrategy = token\n")
    code, output = run_cli("--service", "shipyard", "--config-file", str(tmp_path / "empty.conf"))
    assert code == 1 and "no [database] connection" in output


def test_unknown_revision_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    code, output = run_cli("--service", "shipyard", "--url", url, "--revision", "9999_nope")
    assert code == 1 and "9999_nope" in output
    assert current_revision(url) is None


@pytest.mark.parametrize("service", SERVICES)
def test_replicas_migrating_at_once_serialise_on_postgresql(
        service: str, postgres_url: str) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            upgrader(service)(postgres_url, "head")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert current_revision(postgres_url) == script_dir(service).get_current_head()



@pytest.mark.parametrize("service", SERVICES)
def test_each_service_has_its_own_upgrade_command(service: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if service == "shipyard":
        from shipyard_api.db.cli import main as command
    elif service == "promenade":
        from promenade_api.db.cli import main as command
    else:
        from drydock_api.db.cli import main as command
    conf = tmp_path / f"{service}.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/{service}.db\n")
    monkeypatch.setenv(f"{service.upper()}_CONFIG_FILE", str(conf))
    result = CliRunner().invoke(command, ["upgrade"])
    assert result.exit_code == 0, result.output
    head = script_dir(service).get_current_head()
    assert f"<empty> -> {head}" in result.output
    assert current_revision(f"sqlite:///{tmp_path}/{service}.db") == head
    monkeypatch.delenv(f"{service.upper()}_CONFIG_FILE")
    result = CliRunner().invoke(command, ["upgrade"])
    assert result.exit_code == 2 and "--url or --config-file" in result.output
