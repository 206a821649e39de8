"""`berth db upgrade`: apply Shipyard's and Drydock's Alembic migrations to their databases."""

from __future__ import annotations

import configparser
from collections.abc import Callable
from pathlib import Path

import click
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from sitesim.berthconfig import DB_SERVICES


def upgrader(service: str) -> Callable[[str, str], None]:
    """The service's own `db.upgrade(url, revision)` (serialised across processes)."""
    if service == "shipyard":
        from shipyard_api import db as shipyard_db

        return shipyard_db.upgrade
    from drydock_api import db as drydock_db

    return drydock_db.upgrade


def current_revision(url: str) -> str | None:
    """The Alembic revision the database is at (None: empty, never migrated)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def connection_of(config_file: Path) -> str:
    """`[database] connection` of an oslo.config ini file."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(config_file.read_text())
    except (OSError, configparser.Error) as exc:
        raise click.ClickException(f"cannot read {config_file}: {exc}") from exc
    url = parser.get("database", "connection", fallback="").strip()
    if not url:
        raise click.ClickException(f"{config_file} has no [database] connection")
    return url


def targets(service: str, url: str | None, config_file: str | None,
            berth_dir: str) -> list[tuple[str, str]]:
    """(service, database URL) pairs to upgrade; every problem is reported at once."""
    services = list(DB_SERVICES) if service == "all" else [service]
    problems = []
    if url and config_file:
        problems.append("give --url or --config-file, not both")
    if (url or config_file) and len(services) > 1:
        problems.append("--url and --config-file name one database: add --service shipyard "
                        "or --service drydock")
    if url:
        try:
            make_url(url)
        except ArgumentError as exc:
            problems.append(f"--url is not a database URL: {exc}")
    if problems:
        raise click.UsageError("; ".join(problems))
    if url:
        return [(services[0], url)]
    if config_file:
        return [(services[0], connection_of(Path(config_file)))]
    out = []
    for name in services:
        conf = Path(berth_dir) / f"{name}.conf"
        if not conf.exists():
            raise click.ClickException(f"{conf} not found: run `berth up` first, or give "
                                       "--url or --config-file")
        out.append((name, connection_of(conf)))
    return out


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


@click.group()
def db() -> None:
    """Database maintenance for Shipyard and Drydock."""


@db.command()
@click.option("--service", type=click.Choice(["shipyard", "drydock", "all"]), default="all",
              show_default=True)
@click.option("--url", default=None, help="Database URL (SQLAlchemy), e.g. "
              "postgresql+psycopg://user@host:5432/shipyard or sqlite:////path/db.")
@click.option("--config-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A service config file; its [database] connection is used.")
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False),
              help="Without --url/--config-file: the configs `berth up` wrote here.")
@click.option("--revision", default="head", show_default=True,
              help="Alembic revision to upgrade to.")
def upgrade(service: str, url: str | None, config_file: str | None, berth_dir: str,
            revision: str) -> None:
    """Apply Alembic migrations (from an empty database or any earlier revision)."""
    for name, target in targets(service, url, config_file, berth_dir):
        try:
            before = current_revision(target)
            upgrader(name)(target, revision)
            after = current_revision(target)
        except (SQLAlchemyError, OSError) as exc:
            raise click.ClickException(f"{name}: upgrading {redact(target)} failed: "
                                       f"{exc}") from exc
        except Exception as exc:  # alembic's CommandError and friends (unknown revision)
            raise click.ClickException(f"{name}: {exc}") from exc
        click.echo(f"{name}: {redact(target)}: {before or '<empty>'} -> {after}")
