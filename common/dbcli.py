"""`<service>-db upgrade`: apply one service's Alembic migrations to its database;
`<service>-db audit-verify`: check every hash chain of its audit log (common.audit).

Shipyard and Drydock each expose this as their own console script (`shipyard-db`,
`drydock-db`); the `berth` launcher's `berth db upgrade` reuses the pieces below."""

from __future__ import annotations

import configparser
import os
from collections.abc import Callable
from pathlib import Path

import click
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from common import audit

Upgrade = Callable[[str, str], None]


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


def url_problems(url: str | None, config_file: str | None) -> list[str]:
    """What is wrong with a --url / --config-file pair (every problem, none when fine)."""
    problems = []
    if url and config_file:
        problems.append("give --url or --config-file, not both")
    if url:
        try:
            make_url(url)
        except ArgumentError as exc:
            problems.append(f"--url is not a database URL: {exc}")
    return problems


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def run_upgrade(service: str, upgrade: Upgrade, url: str, revision: str) -> str:
    """Upgrade `url` to `revision`; the line telling what changed."""
    try:
        before = current_revision(url)
        upgrade(url, revision)
        after = current_revision(url)
    except (SQLAlchemyError, OSError) as exc:
        raise click.ClickException(f"{service}: upgrading {redact(url)} failed: {exc}") from exc
    except Exception as exc:  # alembic's CommandError and friends (unknown revision)
        raise click.ClickException(f"{service}: {exc}") from exc
    return f"{service}: {redact(url)}: {before or '<empty>'} -> {after}"


def db_command(service: str, upgrade: Upgrade) -> click.Group:
    """The `<service>-db` command group of one service."""
    env_var = f"{service.upper()}_CONFIG_FILE"

    @click.group(name=f"{service}-db", help=f"{service.capitalize()}'s database maintenance.")
    def group() -> None:
        pass

    @group.command(help="Apply Alembic migrations (from an empty database or any earlier "
                   f"revision). The database is --url, or the [database] connection of "
                   f"--config-file (default: ${env_var}).")
    @click.option("--url", default=None, help="Database URL (SQLAlchemy), e.g. "
                  f"postgresql+psycopg://user@host:5432/{service} or sqlite:////path/db.")
    @click.option("--config-file", default=None,
                  help=f"The {service} config file; its [database] connection is used.")
    @click.option("--revision", default="head", show_default=True,
                  help="Alembic revision to upgrade to.")
    def upgrade_command(url: str | None, config_file: str | None, revision: str) -> None:
        config_file = config_file or (None if url else os.environ.get(env_var))
        problems = url_problems(url, config_file)
        if not url and not config_file:
            problems.append(f"give --url or --config-file (or set ${env_var})")
        if problems:
            raise click.UsageError("; ".join(problems))
        target = url or connection_of(Path(str(config_file)))
        click.echo(run_upgrade(service, upgrade, target, revision))

    group.add_command(upgrade_command, "upgrade")

    @group.command(help="Verify every hash chain of the audit log in the database: exit 0 "
                   "listing each chain's entries and head hash, or 1 naming the first broken "
                   "link (stream, seq, expected and found hash). The database is --url, or the "
                   f"[database] connection of --config-file (default: ${env_var}).")
    @click.option("--url", default=None, help="Database URL (SQLAlchemy).")
    @click.option("--config-file", default=None,
                  help=f"The {service} config file; its [database] connection is used.")
    def audit_verify(url: str | None, config_file: str | None) -> None:
        config_file = config_file or (None if url else os.environ.get(env_var))
        problems = url_problems(url, config_file)
        if not url and not config_file:
            problems.append(f"give --url or --config-file (or set ${env_var})")
        if problems:
            raise click.UsageError("; ".join(problems))
        target = url or connection_of(Path(str(config_file)))
        engine = create_engine(target)
        try:
            with engine.connect() as conn:
                result = audit.verify(conn)
        except SQLAlchemyError as exc:
            raise click.ClickException(f"{service}: reading {redact(target)} failed: "
                                       f"{exc}") from exc
        finally:
            engine.dispose()
        if result.broken is not None:
            click.echo(f"{service}: BROKEN: {result.broken.message()}", err=True)
            raise SystemExit(1)
        for stream, chain in sorted(result.chains.items()):
            click.echo(f"{stream}: {chain['entries']} entries, head {chain['head']}")
        click.echo(f"{service}: every audit chain holds ({len(result.chains)} chains)")

    group.add_command(audit_verify, "audit-verify")
    return group
