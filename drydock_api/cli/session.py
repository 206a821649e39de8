"""The `drydock` CLI's connection to a Drydock API and its output rendering.

Commands get a `Drydock` as `ctx.obj`: `request(...)` sends one API call and returns the
decoded body (a failure prints the status body and exits 1); `emit(data, columns)` prints
a table, JSON or YAML as `-o` asks (a command without a table form prints YAML).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import click
import requests
import yaml
from rich.console import Console

from common.api import API_PREFIX
from common.cli import decode, fail, table
from common.httpclient import CLI_RETRY, retrying_session
from common.jsontypes import JSON, as_object

OUTPUTS = ("table", "json", "yaml")
F = TypeVar("F", bound=Callable[..., object])  # a click command function
Params = Mapping[str, str | int | float | None]  # query parameters


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (build data's script output) as YAML literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


class Drydock:
    """One Drydock API (its base URL and token) and the output settings of this run."""

    def __init__(self, url: str, token: str | None, output: str,
                 session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.output = output
        self.marker = str(uuid.uuid4())
        self.session = session or retrying_session(CLI_RETRY)
        self.console = Console(width=None if sys.stdout.isatty() else 250)

    def request(self, method: str, path: str, *, params: Params | None = None,
                json: JSON = None) -> JSON:
        """One API call; a non-2xx answer prints its status body and exits with 1."""
        headers = {"X-Context-Marker": self.marker, "Accept": "application/json"}
        if self.token:
            headers["X-Auth-Token"] = self.token
        try:
            resp = self.session.request(method, f"{self.url}{API_PREFIX}{path}",
                                        headers=headers, timeout=120, params=params,
                                        json=json)
        except requests.RequestException as exc:
            raise click.ClickException(f"Cannot reach Drydock at {self.url}: {exc}") from exc
        body: JSON = decode(resp)
        if resp.status_code >= 400:
            fail(resp.status_code, body)
        return body

    def emit(self, data: JSON, columns: Sequence[tuple[str, str]] | None = None,
             output: str | None = None) -> None:
        """`data` as JSON, YAML, or (table) a table of `columns` (header, key)."""
        how = output or self.output
        if how == "json":
            click.echo(json.dumps(data, indent=2))
        elif how == "yaml" or columns is None:
            click.echo(yaml.dump(data, Dumper=_BlockDumper, sort_keys=False,
                                 allow_unicode=True).rstrip())
        else:
            rows = data if isinstance(data, list) else [data]
            self.console.print(table([as_object(r) for r in rows], columns))








def output_option(f: F) -> F:
    """`-o` on a command too (as Airship's `node list -o json`); the group's when absent."""
    return click.option("-o", "--output", "output", type=click.Choice(OUTPUTS), default=None,
                        help="table, json or yaml (default: the drydock group's -o)")(f)
