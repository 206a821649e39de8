"""`shipyard`: the click group, global options, the HTTP session and output rendering.

Sub-command modules get a `Shipyard` object as `ctx.obj` (`click.pass_obj`): `request(...)`
sends one API call and returns the decoded body (a failure prints the status body and
exits 1); `emit(data, columns)` prints a table, JSON or YAML as `-o` asks.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import uuid
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click
import requests
import yaml
from requests.adapters import HTTPAdapter
from rich.console import Console
from rich.table import Table
from urllib3.util.retry import Retry

from shipyard_api.cli import actions, plans

API = "/api/v1.0"


def retrying_session() -> requests.Session:
    """A session that retries idempotent calls whose connection dropped (a server may close
    an idle keep-alive connection just as the next poll is sent); POSTs are never resent."""
    retry = Retry(total=3, connect=3, read=3, status=0, backoff_factor=0.2,
                  allowed_methods=frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}))
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    return session


class Shipyard:
    """The CLI's connection to one Shipyard and its output settings."""

    def __init__(self, url: str, token: str | None, output: str, marker: str | None,
                 session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.output = output
        self.marker = marker or str(uuid.uuid4())
        self.session = session or retrying_session()
        # Pipes and files get wide tables rather than truncated cells.
        self.console = Console(width=None if sys.stdout.isatty() else 250)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        out = {"X-Context-Marker": self.marker, "Accept": "application/json"}
        if self.token:
            out["X-Auth-Token"] = self.token
        out.update(extra or {})
        return out

    def raw(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = self.headers(kwargs.pop("headers", None))
        try:
            return self.session.request(method, f"{self.url}{API}{path}", headers=headers,
                                        timeout=kwargs.pop("timeout", 120), **kwargs)
        except requests.RequestException as exc:
            raise click.ClickException(f"Cannot reach Shipyard at {self.url}: {exc}") from exc

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call; a non-2xx answer prints its status body and exits with 1."""
        resp = self.raw(method, path, **kwargs)
        body = decode(resp)
        if resp.status_code >= 400:
            self.fail(resp.status_code, body)
        return body

    def fail(self, code: int, body: Any) -> None:
        if isinstance(body, dict) and body.get("kind") == "Status":
            lines = [f"Error {code} {body.get('reason')}: {body.get('message')}"]
            for m in (body.get("details") or {}).get("messageList") or []:
                if m.get("error", True):
                    lines.append(f"- {m.get('message')}")
            text = "\n".join(lines)
        else:
            text = f"Error {code}: {body}"
        click.echo(text, err=True)
        raise SystemExit(1)

    def emit(self, data: Any, columns: Sequence[tuple[str, str]] | None = None,
             title: str | None = None) -> None:
        """Print `data` as JSON, YAML, or a table of `columns` (header, key) for table mode."""
        if self.output == "json":
            click.echo(json.dumps(data, indent=2, sort_keys=False))
        elif self.output == "yaml" or columns is None:
            click.echo(yaml.safe_dump(data, sort_keys=False).rstrip())
        else:
            self.console.print(table(data if isinstance(data, list) else [data], columns,
                                     title))


def decode(resp: requests.Response) -> Any:
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        return resp.text


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]],
          title: str | None = None) -> Table:
    out = Table(title=title)
    for header, _ in columns:
        out.add_column(header)
    for row in rows:
        out.add_row(*("" if row.get(k) is None else str(row.get(k)) for _, k in columns))
    return out


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
    """Show one action (action/<id>) or one step (step/<id>/<step>)."""


@cli.group()
def commit() -> None:
    """Commit configdocs."""


actions.register(cli, create, get, describe)
plans.register(cli, describe)
if importlib.util.find_spec("shipyard_api.cli.configdocs") is not None:
    importlib.import_module("shipyard_api.cli.configdocs").register(create, get, commit)


def main() -> None:
    cli(prog_name="shipyard")
