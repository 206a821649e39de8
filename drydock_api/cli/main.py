"""`drydock`: the click group, its global options and the sub-command groups."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click

from drydock_api.cli import nodes


def _version() -> str:
    try:
        return version("berth")
    except PackageNotFoundError:
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="drydock")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.pass_context
def cli(ctx: click.Context, output: str) -> None:
    """Drydock's operator commands: check a node's BMC before enrolling it."""
    ctx.obj = {"output": output}


@cli.group()
def node() -> None:
    """Commands about one node (its BMC)."""


nodes.register(node)


def main() -> None:
    cli(prog_name="drydock")
