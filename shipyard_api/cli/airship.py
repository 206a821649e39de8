"""`shipyard logs`, `get workflows`, `describe workflow|validation|notedetails`: the commands
Airship's shipyard CLI has for step logs, workflows, validations and note details."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from shipyard_api.cli.session import Shipyard

WORKFLOW_COLUMNS = [("Workflow", "workflow_id"), ("State", "state"),
                    ("Action", "action_id"), ("Started", "start_date"), ("Ended", "end_date")]
VALIDATION_COLUMNS = [("Validation", "id"), ("Name", "validation_name"),
                      ("Error", "error"), ("Message", "message")]


def _pair(target: str, kind: str) -> tuple[str, str]:
    value = target.split("/", 1)[1] if target.startswith(f"{kind}/") else target
    if "/" not in value:
        raise click.BadParameter(f"use {kind}/<action id>/<{kind} id>")
    first, second = value.split("/", 1)
    return first, second


@click.command("logs")
@click.argument("target", metavar="step/ACTION_ID/STEP_ID")
@click.option("--try", "try_number", type=click.IntRange(min=1), default=None,
              help="The try to show (default the last).")
@click.option("--tail", type=click.IntRange(min=1), default=None,
              help="Only the last so many lines.")
@click.pass_obj
def logs(sy: Shipyard, target: str, try_number: int | None, tail: int | None) -> None:
    """Print a step's log lines."""
    action_id, step_id = _pair(target, "step")
    params = {k: v for k, v in (("try", try_number), ("tail", tail)) if v is not None}
    text = sy.request("GET", f"/actions/{action_id}/steps/{step_id}/logs", params=params,
                      headers={"Accept": "text/plain"})
    click.echo(text or "", nl=False)


@click.command("workflows")
@click.option("--since", default=None, help="ISO 8601 date or time (default 30 days ago).")
@click.pass_obj
def get_workflows(sy: Shipyard, since: str | None) -> None:
    """List workflows (the runs of actions)."""
    sy.emit(sy.request("GET", "/workflows", params={"since": since} if since else None),
            WORKFLOW_COLUMNS)


@click.command("workflow")
@click.argument("workflow_id")
@click.pass_obj
def describe_workflow(sy: Shipyard, workflow_id: str) -> None:
    """Show one workflow and its steps."""
    sy.emit(sy.request("GET", f"/workflows/{workflow_id}"))


@click.command("validation")
@click.argument("target", metavar="ACTION_ID/VALIDATION_ID")
@click.pass_obj
def describe_validation(sy: Shipyard, target: str) -> None:
    """Show one validation of an action."""
    action_id, validation_id = _pair(target, "validation")
    sy.emit(sy.request("GET", f"/actions/{action_id}/validations/{validation_id}"),
            VALIDATION_COLUMNS)


@click.command("notedetails")
@click.argument("note_id")
@click.pass_obj
def describe_notedetails(sy: Shipyard, note_id: str) -> None:
    """Show the details of a note."""
    sy.emit(sy.request("GET", f"/notedetails/{note_id}"))


def register(cli: click.Group, get: click.Group, describe: click.Group) -> None:
    cli.add_command(logs)
    get.add_command(get_workflows)
    for command in (describe_workflow, describe_validation, describe_notedetails):
        describe.add_command(command)
