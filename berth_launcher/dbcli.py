"""`berth db upgrade`: Shipyard's, Drydock's and Promenade's own migrations, on the databases
`berth up` configured (or one given by --url / --config-file)."""

from __future__ import annotations

from pathlib import Path

import click

from berth_launcher.berthconfig import DB_SERVICES
from common.dbcli import Upgrade, connection_of, current_revision, run_upgrade, url_problems

__all__ = ["current_revision", "db", "targets", "upgrader"]


def upgrader(service: str) -> Upgrade:
    """The service's own `db.upgrade(url, revision)` (serialised across processes)."""
    if service == "shipyard":
        from shipyard_api import db as shipyard_db

        return shipyard_db.upgrade
    if service == "promenade":
        from promenade_api import db as promenade_db

        return promenade_db.upgrade
    from drydock_api import db as drydock_db

    return drydock_db.upgrade


def targets(service: str, url: str | None, config_file: str | None,
            berth_dir: str) -> list[tuple[str, str]]:
    """(service, database URL) pairs to upgrade; every problem is reported at once."""
    services = list(DB_SERVICES) if service == "all" else [service]
    problems = url_problems(url, config_file)
    if (url or config_file) and len(services) > 1:
        problems.insert(1 if len(problems) else 0,
                        "--url and --config-file name one database: add --service shipyard, "
                        "--service drydock or --service promenade")
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


@click.group()
def db() -> None:
    """Database maintenance for Shipyard, Drydock and Promenade."""


@db.command()
@click.option("--service", type=click.Choice(["shipyard", "drydock", "promenade", "all"]),
              default="all", show_default=True)
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
    """Apply Alembic migrations (from an empty database or any earlier revision); the same
    as each service's own `shipyard-db upgrade` / `drydock-db upgrade`."""
    for name, target in targets(service, url, config_file, berth_dir):
        click.echo(run_upgrade(name, upgrader(name), target, revision))
