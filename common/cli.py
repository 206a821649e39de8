"""What the service CLIs share: decoding an answer, printing a status body, a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NoReturn

import click
import requests
from rich.table import Table

from common.jsontypes import JSON


def decode(resp: requests.Response) -> JSON:
    """The answer's JSON, its text when it is not JSON, None when empty."""
    if not resp.content:
        return None
    try:
        value: JSON = resp.json()
        return value
    except ValueError:
        return resp.text


def fail(code: int, body: object) -> NoReturn:
    """Print a failed call's status body (its reason, message and each error) and exit 1."""
    if isinstance(body, dict) and body.get("kind") == "Status":
        lines = [f"Error {code} {body.get('reason')}: {body.get('message')}"]
        lines += [f"- {m.get('message')}" for m in
                  (body.get("details") or {}).get("messageList") or [] if m.get("error", True)]
        text = "\n".join(lines)
    else:
        text = f"Error {code}: {body}"
    click.echo(text, err=True)
    raise SystemExit(1)


def table(rows: Sequence[Mapping[str, object]], columns: Sequence[tuple[str, str]],
          title: str | None = None) -> Table:
    """`rows` as a table of `columns` (header, key); a missing value is an empty cell."""
    out = Table(title=title)
    for header, _ in columns:
        out.add_column(header)
    for row in rows:
        out.add_row(*("" if row.get(k) is None else str(row.get(k)) for _, k in columns))
    return out
