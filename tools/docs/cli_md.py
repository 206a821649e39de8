"""The CLI reference, generated from the commands themselves: every console script of the
`berth` distribution, its sub-commands (click) and its `--help` text as the command prints it."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from importlib.metadata import distribution
from typing import Any

import click

WIDTH = 88  # the help text wraps to fit the page
# The operator's commands, each on a page of its own; every other script (the services'
# servers, workers and database tools) goes on the services page.
PAGES = {
    "shipyard": "The operator's client of Shipyard: documents, actions, plans, progress.",
    "drydock": "Drydock's operator commands: check a node's Redfish BMC before enrolling it.",
    "berth": "The launcher: a simulated site and the three services on one machine.",
    "sitesim": "The simulated site on its own (Kubernetes, MAAS, BMCs, etcd).",
}
SERVICES_INTRO = ("The programs a deployment runs: each service's API server "
                  "(gunicorn), its workers and its database migrations.")


def scripts() -> dict[str, Any]:
    """Console script name → what it runs (a click command where there is one)."""
    out: dict[str, Any] = {}
    eps = [ep for ep in distribution("berth").entry_points if ep.group == "console_scripts"]
    for ep in sorted(eps, key=lambda e: e.name):
        target = ep.load()
        if not isinstance(target, click.Command):
            # a main() wrapping a click group defined beside it (`shipyard`)
            wrapped = getattr(sys.modules[target.__module__], "cli", None)
            target = wrapped if isinstance(wrapped, click.Command) else target
        out[ep.name] = target
    return out


def _walk(command: click.Command, name: str, parent: click.Context | None
          ) -> Iterator[tuple[str, click.Command, click.Context]]:
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH,
                        max_content_width=WIDTH, **command.context_settings)
    yield ctx.command_path, command, ctx
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            child = command.get_command(ctx, sub)
            if child is not None and not child.hidden:
                yield from _walk(child, sub, ctx)


def argparse_help(name: str, main: Any) -> str:
    """What `name --help` prints, for a main() that parses sys.argv with argparse."""
    out = io.StringIO()
    argv, columns = sys.argv, os.environ.get("COLUMNS")
    sys.argv, os.environ["COLUMNS"] = [name, "--help"], str(WIDTH)
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main()
    finally:
        sys.argv = argv
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    return out.getvalue()


def _fence(body: str) -> str:
    return "```text\n" + body.rstrip() + "\n```"


def section(name: str, target: Any, level: int = 2) -> str:
    if not isinstance(target, click.Command):
        return f"{'#' * level} `{name}`\n\n" + _fence(argparse_help(name, target))
    parts = []
    for path, command, ctx in _walk(target, name, None):
        depth = level + path.count(" ")
        summary = command.get_short_help_str(limit=WIDTH)
        parts.append(f"{'#' * min(depth, 6)} `{path}`\n\n"
                     + (f"{summary}\n\n" if summary else "") + _fence(command.get_help(ctx)))
    return "\n\n".join(parts)


def pages() -> dict[str, str]:
    """reference/cli/<command>.md for the operator's commands, reference/cli/services.md."""
    found = scripts()
    out = {}
    for name, intro in PAGES.items():
        out[f"reference/cli/{name}.md"] = (
            f"# `{name}`\n\n{intro} Generated from the command's own help "
            f"(`{name} --help` and each sub-command's).\n\n" + section(name, found[name]) + "\n")
    rest = [n for n in found if n not in PAGES]
    out["reference/cli/services.md"] = (
        "# Service commands\n\n" + SERVICES_INTRO + " Generated from each command's own "
        "`--help`.\n\n" + "\n\n".join(section(n, found[n]) for n in rest) + "\n")
    return out
