"""Follow an action as it runs: redrawn in place on a terminal, appended lines otherwise,
one JSON object per change with `-o json`.

What changes is shown with the detail a step records while it runs (a drain's pods left,
grouped by why they are still there).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import click
import yaml
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from common.clients.generated.shipyard import Action, Step, StepSummary
from shipyard_api.actions.progress import progress_lines, step_state
from shipyard_api.cli.session import Shipyard
from shipyard_api.workflow.states import StepState

ENDED = ("complete", "failed", "stopped")
LONG_POLL = 15.0  # seconds one look may wait for a change (Shipyard caps it, 20 s by default)


def last_note(step: Step | StepSummary) -> str:
    notes = step.get("notes") or []
    return str(notes[-1].get("message") or "") if notes else ""


def steps_table(action: Action) -> Table:
    out = Table(title=f"{action['name']} {action['id']}: {action['action_lifecycle']}")
    for header in ("Step", "State", "Attempts", "Start", "End", "Reason", "Last note"):
        out.add_column(header)
    for step in action.get("steps") or []:
        note = "\n".join([last_note(step), *progress_lines(step)]).strip()
        out.add_row(*("" if v is None else str(v) for v in (
            step.get("id"), step_state(step), step.get("attempts"), step.get("start"),
            step.get("end"), step.get("reason"), note)))
    return out


def step_signature(step: Step | StepSummary) -> tuple[object, ...]:
    return (step_state(step), step.get("attempts"), step.get("reason"), last_note(step),
            tuple(progress_lines(step)))


def changed_lines(old: Action | None, new: Action) -> list[str]:
    """Plain lines saying what changed between two views of the action."""
    stamp = time.strftime("%H:%M:%S")
    lines = []
    if old is None or old.get("state") != new.get("state"):
        lines.append(f"{stamp} action {new['id']} {new['state']}"
                     + (f": {new.get('message')}" if new["state"] in ENDED
                        and new.get("message") else ""))
    before = {s.get("id"): step_signature(s) for s in (old or {}).get("steps") or []}
    for step in new.get("steps") or []:
        if before.get(step.get("id")) == step_signature(step):
            continue
        if old is None and step_state(step) == StepState.PENDING:
            continue
        note = last_note(step)
        lines.append(f"{stamp} {step.get('id')} {step_state(step)}"
                     + (f": {note}" if note else ""))
        lines += [f"    {line}" for line in progress_lines(step)]
    return lines


def views(sy: Shipyard, action_id: str, poll: float, timeout: float | None,
          sleep: Callable[[float], None] = time.sleep) -> Iterator[Action]:
    """Each different view of the action until it ends (then the last one again is not).
    Each look long-polls: Shipyard answers when the action changes (or after LONG_POLL s);
    `poll` seconds pass between looks only when it cannot hold the request."""
    deadline = None if timeout is None else time.monotonic() + timeout
    last: Action | None = None
    version: str | None = None
    while True:
        wait = LONG_POLL if deadline is None else min(LONG_POLL, deadline - time.monotonic())
        action, version, waited = sy.long_poll(f"/actions/{action_id}", version, wait)
        if action != last:
            yield action
            last = action
        if action["state"] in ENDED:
            return
        if deadline is not None and time.monotonic() > deadline:
            raise click.ClickException(f"Action {action_id} still {action['state']} "
                                       f"after {timeout:g} s")
        if version is None or waited == "busy":
            sleep(poll)


def watch(sy: Shipyard, action_id: str, poll: float, timeout: float | None,
          tty: bool | None = None) -> Action:
    """Follow the action until it ends and return its last view."""
    tty = sy.console.is_terminal if tty is None else tty
    last: Action | None = None
    if sy.output == "table" and tty:
        with Live(Text("…"), console=sy.console, refresh_per_second=4) as live:
            for action in views(sy, action_id, poll, timeout):
                live.update(Group(steps_table(action)), refresh=True)
                last = action
    else:
        for action in views(sy, action_id, poll, timeout):
            if sy.output == "json":
                click.echo(json.dumps(action, separators=(",", ":")))
            elif sy.output == "yaml":
                click.echo("---\n" + yaml.safe_dump(action, sort_keys=False).rstrip())
            else:
                for line in changed_lines(last, action):
                    click.echo(line)
            last = action
    assert last is not None
    return last
