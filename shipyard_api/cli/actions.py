"""`shipyard create action`, `get actions`, `describe action|step`, `pause|unpause|stop`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from shipyard_api.cli.watch import steps_table, watch
from shipyard_api.workflow.states import ActionState

if TYPE_CHECKING:
    from shipyard_api.cli.session import Shipyard

ACTION_COLUMNS = [("Name", "name"), ("Action", "id"), ("Lifecycle", "action_lifecycle"),
                  ("Created", "datetime"), ("User", "user"), ("Reason", "reason")]

STATUS_COLUMNS = {
    "nodes-provision-status": [("Hostname", "hostname"), ("Status", "status"),
                               ("Retired", "retired")],
    "machines-power-state": [("Hostname", "hostname"), ("Power State", "power_state"),
                             ("Error", "error")],
}


def parse_params(pairs: tuple[str, ...]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not key=value", param_hint="--param")
        key, value = pair.split("=", 1)
        params[key.strip()] = value.strip()
    return params


def strip_kind(target: str, kind: str = "action") -> str:
    return target.split("/", 1)[1] if target.startswith(f"{kind}/") else target


@click.command("action")
@click.argument("name")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Action parameter (repeatable), e.g. target_nodes=node01,node02.")
@click.option("--allow-intermediate-commits", is_flag=True,
              help="Run deploy_site/update_site despite intermediate commits.")
@click.option("--plan", "plan_id", default=None, metavar="PLAN_ID",
              help="Act on this plan (`shipyard plan`): its steps re-check what it relied on.")
@click.option("--wait", is_flag=True, help="Follow the action until it ends (redrawn in "
              "place on a terminal; one line per change otherwise; one JSON object per "
              "change with -o json).")
@click.option("--poll", default=2.0, show_default=True,
              help="Seconds between looks when Shipyard cannot long-poll (each look "
              "otherwise waits in Shipyard until the action changes).")
@click.option("--timeout", type=float, default=None, help="Give up waiting after (s).")
@click.pass_obj
def create_action(sy: Shipyard, name: str, params: tuple[str, ...],
                  allow_intermediate_commits: bool, plan_id: str | None, wait: bool,
                  poll: float, timeout: float | None) -> None:
    """Create the action NAME (redeploy_server, relabel_nodes, deploy_site, update_site)."""
    parameters = parse_params(params)
    if allow_intermediate_commits:
        parameters["allow-intermediate-commits"] = "true"
    body: dict[str, str | dict[str, str]] = {"name": name, "parameters": parameters}
    if plan_id:
        body["plan_id"] = plan_id
    action = sy.request("POST", "/actions", json=body)
    if not wait:
        sy.emit(action, ACTION_COLUMNS)
        return
    if sy.output == "table":
        click.echo(f"Action {action['id']} created; following it (context marker "
                   f"{action['context_marker']})")
    action = watch(sy, action["id"], poll, timeout)
    if sy.output == "table":
        sy.emit(action, ACTION_COLUMNS)
    if action["state"] != ActionState.COMPLETE.value:
        click.echo(f"Action {action['id']} ended {action['state']}: "
                   f"{action.get('message') or action.get('reason')}", err=True)
        raise SystemExit(1)

@click.command("actions")
@click.pass_obj
def get_actions(sy: Shipyard) -> None:
    """List actions."""
    sy.emit(sy.request("GET", "/actions"), ACTION_COLUMNS)

@click.command("action")
@click.argument("action_id")
@click.option("--watch", "follow", is_flag=True,
              help="Follow the action until it ends: redrawn in place on a terminal, one "
              "line per change otherwise, one JSON object per change with -o json.")
@click.option("--poll", default=2.0, show_default=True,
              help="Seconds between looks when Shipyard cannot long-poll (each look "
              "otherwise waits in Shipyard until the action changes).")
@click.option("--timeout", type=float, default=None, help="Give up watching after (s).")
@click.pass_obj
def describe_action(sy: Shipyard, action_id: str, follow: bool, poll: float,
                    timeout: float | None) -> None:
    """Show an action, its steps (with a running drain's pods left), validations and
    command audit."""
    if follow:
        watch(sy, action_id, poll, timeout)
        return
    action = sy.request("GET", f"/actions/{action_id}")
    if sy.output != "table":
        sy.emit(action)
        return
    sy.emit(action, ACTION_COLUMNS)
    sy.console.print(steps_table(action))
    for v in action.get("validations") or []:
        click.echo(f"Validation: {v.get('message')}")
    for a in action.get("command_audit") or []:
        click.echo(f"Audit: {a['datetime']} {a['user']} {a['command']} ({a['outcome']})")

@click.command("step")
@click.argument("target", metavar="ACTION_ID/STEP_ID")
@click.pass_obj
def describe_step(sy: Shipyard, target: str) -> None:
    """Show one step with what Promenade or Drydock answered."""
    if "/" not in target:
        raise click.BadParameter("use step/<action id>/<step id>")
    action_id, step_id = target.split("/", 1)
    sy.emit(sy.request("GET", f"/actions/{action_id}/steps/{step_id}"))

@click.command("site-statuses")
@click.option("--filter", "filters", multiple=True,
              type=click.Choice(["nodes-provision-status", "machines-power-state"]),
              help="Only this status list (repeatable; default both).")
@click.pass_obj
def get_site_statuses(sy: Shipyard, filters: tuple[str, ...]) -> None:
    """Nodes' provisioning status and power state, as Drydock sees them."""
    body = sy.request("GET", "/site_statuses", params={"filters": list(filters)})
    if sy.output != "table":
        sy.emit(body)
        return
    for key, columns in STATUS_COLUMNS.items():
        if key in body:
            sy.emit(body[key], columns, title=key)


def register(cli: click.Group, create: click.Group, get: click.Group,
             describe: click.Group) -> None:
    """Add the action commands to the `shipyard` groups."""
    create.add_command(create_action)
    get.add_command(get_actions)
    get.add_command(get_site_statuses)
    describe.add_command(describe_action)
    describe.add_command(describe_step)
    for verb in ("pause", "unpause", "stop"):
        cli.add_command(_control_command(verb))


def _control_command(verb: str) -> click.Command:
    @click.command(verb, help=f"{verb.capitalize()} an action: {verb} action/<id>.")
    @click.argument("target", metavar="action/ID")
    @click.pass_obj
    def control(sy: Shipyard, target: str) -> None:
        action_id = strip_kind(target)
        action = sy.request("POST", f"/actions/{action_id}/control/{verb}")
        sy.emit(action, ACTION_COLUMNS)

    return control
