"""The CLI's connection to Shipyard: the HTTP session, API calls, and output rendering.

Sub-command modules get a `Shipyard` object as `ctx.obj` (`click.pass_obj`): `request(...)`
sends one API call and returns the decoded body (a failure prints the status body and
exits 1); `emit(data, columns)` prints a table, JSON or YAML as `-o` asks.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import click
import requests
import yaml
from rich.console import Console

from common.api import API_PREFIX
from common.cli import decode, fail, table
from common.httpclient import CLI_RETRY, retrying_session

Params = Mapping[str, str | int | list[str]]  # a request's query parameters

VERSION_HEADER = "X-Action-Version"  # of GET /actions/{id}, for its long-poll
WAITED_HEADER = "X-Long-Poll"


class Shipyard:
    """The CLI's connection to one Shipyard and its output settings."""

    def __init__(self, url: str, token: str | None, output: str, marker: str | None,
                 session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.output = output
        self.marker = marker or str(uuid.uuid4())
        self.session = session or retrying_session(CLI_RETRY)
        # Pipes and files get wide tables rather than truncated cells.
        self.console = Console(width=None if sys.stdout.isatty() else 250)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        out = {"X-Context-Marker": self.marker, "Accept": "application/json"}
        if self.token:
            out["X-Auth-Token"] = self.token
        out.update(extra or {})
        return out

    def raw(self, method: str, path: str, *, params: Params | None = None,
            json: object = None, data: bytes | None = None,
            headers: Mapping[str, str] | None = None, timeout: float = 120) -> requests.Response:
        try:
            return self.session.request(method, f"{self.url}{API_PREFIX}{path}",
                                        headers=self.headers(headers), timeout=timeout,
                                        params=params, json=json, data=data)
        except requests.RequestException as exc:
            raise click.ClickException(f"Cannot reach Shipyard at {self.url}: {exc}") from exc

    def request(self, method: str, path: str, *, params: Params | None = None,
                json: object = None, data: bytes | None = None,
                headers: Mapping[str, str] | None = None) -> Any:
        """One API call (the decoded answer); a non-2xx answer prints its status body and
        exits with 1."""
        resp = self.raw(method, path, params=params, json=json, data=data, headers=headers)
        body = decode(resp)
        if resp.status_code >= 400:
            fail(resp.status_code, body)
        return body

    def long_poll(self, path: str, since: str | None, wait: float
                  ) -> tuple[Any, str | None, str | None]:
        """GET `path`; with `since` (a version of an earlier answer) the server may hold the
        request up to `wait` seconds until it changes. The body, its version (None from a
        server that cannot long-poll) and how the wait ended (changed, timeout, busy)."""
        params = {"since": since, "wait": f"{wait:.3f}"} if since and wait > 0 else None
        resp = self.raw("GET", path, params=params, timeout=wait + 60)
        body = decode(resp)
        if resp.status_code >= 400:
            fail(resp.status_code, body)
        return body, resp.headers.get(VERSION_HEADER), resp.headers.get(WAITED_HEADER)

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




