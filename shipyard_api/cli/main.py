"""`shipyard`: the click group, global options and sub-command registration (the
connection and output rendering are in `session`)."""

from __future__ import annotations

import importlib
import importlib.util
import uuid
from importlib.metadata import PackageNotFoundError, version

import click

from shipyard_api.cli import actions, airship, audit, plans
from shipyard_api.cli.session import Shipyard


def _version() -> str:
    try:
        return version("berth")
    except PackageNotFoundError:
        return "unknown"


def hoist_output(args: list[str]) -> list[str]:
    """Move `-o FORMAT` (`-oFORMAT`, `--output[=]FORMAT`) from after a sub-command to the
    front, so `shipyard describe action/ID -o json` works as kubectl users type it."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg in ("-o", "--output") and i + 1 < len(args):
            front += args[i:i + 2]
            i += 2
            continue
        if arg.startswith("--output=") or (arg.startswith("-o") and not arg.startswith("--")):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


class OutputAnywhereGroup(click.Group):
    """The top-level group: accepts `-o` after the sub-command too."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_output(args))


class SlashGroup(click.Group):
    """Accepts `action/<id>` as well as `action <id>` (Airship's CLI style)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and "/" in args[0] and not args[0].startswith("-"):
            kind, rest = args[0].split("/", 1)
            args = [kind, rest, *args[1:]]
        return super().parse_args(ctx, args)


@click.group(cls=OutputAnywhereGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="shipyard")
@click.option("--url", envvar="SHIPYARD_URL", default="http://127.0.0.1:9000",
              show_default=True, help="Shipyard base URL (or SHIPYARD_URL).")
@click.option("--token", envvar="SHIPYARD_TOKEN", default=None,
              help="X-Auth-Token (or SHIPYARD_TOKEN).")
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table",
              show_default=True)
@click.option("--context-marker", default=None, help="A UUID to trace this request by.")
@click.pass_context
def cli(ctx: click.Context, url: str, token: str | None, output: str,
        context_marker: str | None) -> None:
    """Operate a site through Shipyard: documents, actions, and their progress."""
    if context_marker is not None:
        try:
            uuid.UUID(context_marker)
        except ValueError as exc:
            raise click.BadParameter("must be a UUID", param_hint="--context-marker") from exc
    ctx.obj = Shipyard(url, token, output, context_marker)


@cli.group()
def create() -> None:
    """Create configdocs or an action."""


@cli.group()
def get() -> None:
    """List configdocs, rendered documents, actions, site statuses."""


@cli.group(cls=SlashGroup)
def describe() -> None:
    """Show one action (action/<id>), step (step/<id>/<step>), validation
    (validation/<id>/<validation>), workflow (workflow/<id>) or note's details
    (notedetails/<note id>)."""


@cli.group()
def commit() -> None:
    """Commit configdocs."""


actions.register(cli, create, get, describe)
airship.register(cli, get, describe)
plans.register(cli, describe)
audit.register(cli)
if importlib.util.find_spec("shipyard_api.cli.configdocs") is not None:
    importlib.import_module("shipyard_api.cli.configdocs").register(create, get, commit)


def main() -> None:
    cli(prog_name="shipyard")
