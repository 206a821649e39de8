"""`shipyard audit verify` and `shipyard audit list`: the audit log of Shipyard's changes."""

from __future__ import annotations

import click

from common.cli import decode, fail
from common.jsontypes import JSON, as_object
from shipyard_api.cli.session import Shipyard

ENTRY_COLUMNS = [("Stream", "stream"), ("Seq", "seq"), ("User", "user"),
                 ("On behalf of", "on_behalf_of"), ("Object", "object"), ("Change", "change"),
                 ("Old", "old"), ("New", "new")]
CHAIN_COLUMNS = [("Stream", "stream"), ("Entries", "entries"), ("Head hash", "head")]


@click.group()
def audit() -> None:
    """Read and verify the audit log (hash-chained per stream)."""


@audit.command("verify")
@click.pass_obj
def verify(sy: Shipyard) -> None:
    """Check every chain; exit 1 naming the first broken link (stream, seq, expected and
    found hash)."""
    resp = sy.raw("GET", "/audit/verify")
    body: JSON = decode(resp)
    if resp.status_code != 200:
        broken = as_object(as_object(as_object(body).get("details")).get("broken"))
        if broken and sy.output == "table":
            click.echo(f"BROKEN: stream {broken['stream']} seq {broken['seq']}: "
                       f"{broken['problem']}\n  expected {broken['expected']}\n"
                       f"  found    {broken['found']}", err=True)
            raise SystemExit(1)
        fail(resp.status_code, body)
    answer = as_object(body)
    chains = as_object(as_object(answer.get("details")).get("chains"))
    rows: list[JSON] = [{"stream": s, **as_object(c)} for s, c in sorted(chains.items())]
    if sy.output == "table":
        message = answer.get("message")
        sy.emit(rows, CHAIN_COLUMNS, title=None if message is None else str(message))
    else:
        sy.emit(body)


@audit.command("list")
@click.option("--stream", default=None, help="One stream, e.g. shipyard.actions.")
@click.option("--since", default=None, help="Entries at or after (epoch seconds or ISO 8601).")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 1000))
@click.pass_obj
def list_entries(sy: Shipyard, stream: str | None, since: str | None, limit: int) -> None:
    """Entries in chain order."""
    params = {k: v for k, v in {"stream": stream, "since": since, "limit": limit}.items()
              if v is not None}
    entries = sy.request("GET", "/audit", params=params)["entries"]
    sy.emit(entries, ENTRY_COLUMNS)


def register(cli: click.Group) -> None:
    cli.add_command(audit)
