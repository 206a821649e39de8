"""`drydock`: the click group, its global options and the sub-command groups."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click

from drydock_api.cli import nodes, nodeview, tasks
from drydock_api.cli.session import OUTPUTS, Drydock


def _version() -> str:
    try:
        return version("berth")
    except PackageNotFoundError:
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="drydock")
@click.option("--url", "-u", envvar=["DRYDOCK_URL", "DD_URL"], default="http://127.0.0.1:9002",
              show_default=True, help="Drydock base URL (or DRYDOCK_URL, or Airship's DD_URL).")
@click.option("--token", envvar=["DRYDOCK_TOKEN", "OS_TOKEN"], default=None,
              help="X-Auth-Token (or DRYDOCK_TOKEN, or Airship's OS_TOKEN).")
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table",
              show_default=True)
@click.pass_context
def cli(ctx: click.Context, url: str, token: str | None, output: str) -> None:
    """Drydock's operator commands: tasks, nodes and their build data, BMC checks."""
    ctx.obj = Drydock(url, token, output)


@cli.group()
def task() -> None:
    """Create, list and show tasks; their build data; purge old ones."""


@cli.group()
def node() -> None:
    """List and show nodes, retire them, their build data; check a BMC."""


tasks.register(task)
nodeview.register(node)
nodes.register(node)


def main() -> None:
    cli(prog_name="drydock")
