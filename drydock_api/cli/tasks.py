"""`drydock task ...`: create (optionally waiting for the end), list, show, builddata, delete,
with Airship's drydock CLI options (--design-ref, --action, --node-names, --rack-names,
--node-tags, --block, --poll-interval, --task-id, --days)."""

from __future__ import annotations

import math

import click
import yaml

from common.jsontypes import JSON, JSONObject, as_list, as_object
from common.poll import NotYet, poll
from drydock_api.cli.session import Drydock, output_option

FINISHED = ("complete", "terminated")  # the statuses Airship's CLI stops waiting at
TASK_COLUMNS = [("TASK", "task_id"), ("ACTION", "action"), ("STATUS", "status"),
                ("RESULT", "result_status"), ("CREATED", "created"),
                ("SUCCESSES", "successes"), ("FAILURES", "failures")]


def _names(raw: str | None) -> list[str]:
    return [x.strip() for x in (raw or "").split(",") if x.strip()]


def node_filter(node_names: str | None, rack_names: str | None,
                node_tags: str | None) -> JSONObject | None:
    """The filter Airship's `task create` builds: one union entry, intersected."""
    entry: JSONObject = {"filter_type": "union"}
    for key, raw in (("node_names", node_names), ("rack_names", rack_names),
                     ("node_tags", node_tags)):
        if _names(raw):
            entry[key] = [*_names(raw)]
    if len(entry) == 1:
        return None
    return {"filter_set_type": "intersection", "filter_set": [entry]}


def _options(pairs: tuple[str, ...]) -> JSONObject:
    options: JSONObject = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--option")
        options[key] = yaml.safe_load(value) if value else ""
    return options


def _row(task: JSON) -> JSONObject:
    result = as_object(as_object(task).get("result"))
    return {**as_object(task), "result_status": result.get("status"),
            "successes": ",".join(str(n) for n in as_list(result.get("successes"))),
            "failures": ",".join(str(n) for n in as_list(result.get("failures")))}


def _wait(dd: Drydock, task_id: str, poll_interval: float) -> JSONObject:
    def finished() -> JSONObject | NotYet[JSONObject]:
        task = as_object(dd.request("GET", f"/tasks/{task_id}"))
        return task if task.get("status") in FINISHED else NotYet(task)

    return poll(finished, deadline=math.inf, interval=poll_interval, expire=lambda task: task)


def _show(dd: Drydock, task: JSON, output: str | None) -> None:
    how = output or dd.output
    dd.emit(_row(task) if how == "table" else task, TASK_COLUMNS, output)


@click.command("create")
@click.option("--design-ref", "-d", envvar="DESIGN_REF",
              help="The design reference (or DESIGN_REF).")
@click.option("--action", "-a", help="The action: verify_nodes, prepare_nodes, deploy_nodes, "
                                     "destroy_nodes, ...")
@click.option("--node-names", "-n", help="The nodes targeted, comma separated.")
@click.option("--rack-names", "-r", help="The racks targeted, comma separated.")
@click.option("--node-tags", "-t", help="The node tags targeted, comma separated.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A task option (repeatable), e.g. preserve_local_storage=true.")
@click.option("--block/--no-block", "-b", default=False,
              help="Wait until the task is complete or terminated.")
@click.option("--poll-interval", type=float, default=5.0, show_default=True,
              help="Seconds between polls with --block.")
@output_option
@click.pass_obj
def create_command(dd: Drydock, design_ref: str | None, action: str | None,
                   node_names: str | None, rack_names: str | None, node_tags: str | None,
                   options: tuple[str, ...], block: bool, poll_interval: float,
                   output: str | None) -> None:
    """Create a task. With --block, exit 1 unless its result is success."""
    if not design_ref:
        raise click.UsageError("Design reference must be specified using --design-ref")
    if not action:
        raise click.UsageError("Action must be specified using --action")
    body: JSONObject = {"action": action, "design_ref": design_ref,
                            "node_filter": node_filter(node_names, rack_names, node_tags)}
    if options:
        body["options"] = _options(options)
    task = as_object(dd.request("POST", "/tasks", json=body))
    if block:
        task = _wait(dd, str(task["task_id"]), poll_interval)
    _show(dd, task, output)
    if block and as_object(task.get("result")).get("status") != "success":
        raise SystemExit(1)


@click.command("list")
@click.option("--status", help="Only these statuses, comma separated.")
@click.option("--action", help="Only these actions, comma separated.")
@click.option("--limit", type=int, default=100, show_default=True)
@output_option
@click.pass_obj
def list_command(dd: Drydock, status: str | None, action: str | None, limit: int,
                 output: str | None) -> None:
    """List top-level tasks, newest first."""
    params = {"limit": limit, "status": status, "action": action}
    tasks = dd.request("GET", "/tasks", params={k: v for k, v in params.items() if v})
    how = output or dd.output
    dd.emit([_row(t) for t in as_list(tasks)] if how == "table" else tasks, TASK_COLUMNS,
            output)


def _task_id(task_id: str | None, task_id_opt: str | None) -> str:
    found = task_id_opt or task_id
    if not found:
        raise click.UsageError("The task id must be specified by --task-id")
    return found


@click.command("show")
@click.argument("task_id", required=False)
@click.option("--task-id", "-t", "task_id_opt", help="The task id.")
@click.option("--block/--no-block", "-b", default=False,
              help="Wait until the task is complete or terminated.")
@click.option("--poll-interval", type=float, default=5.0, show_default=True)
@click.option("--layers", type=int, default=0, help="Subtask layers (-1: all): the tree.")
@click.option("--subtask-errors", is_flag=True, help="Add the subtasks' errors.")
@click.option("--builddata", is_flag=True, help="Add the build data the task collected.")
@output_option
@click.pass_obj
def show_command(dd: Drydock, task_id: str | None, task_id_opt: str | None, block: bool,
                 poll_interval: float, layers: int, subtask_errors: bool, builddata: bool,
                 output: str | None) -> None:
    """Show a task (its status, result, subtasks)."""
    tid = _task_id(task_id, task_id_opt)
    if block:
        _wait(dd, tid, poll_interval)
    params = {"layers": layers or None, "subtaskerrors": "true" if subtask_errors else None,
              "builddata": "true" if builddata else None}
    task = dd.request("GET", f"/tasks/{tid}", params={k: v for k, v in params.items() if v})
    if layers:  # a tree: {init_task_id, <id>: task, ...}
        dd.emit(task, None, output if output != "table" else "yaml")
        return
    _show(dd, task, output)


@click.command("builddata")
@click.argument("task_id", required=False)
@click.option("--task-id", "-t", "task_id_opt", help="The task id.")
@output_option
@click.pass_obj
def builddata_command(dd: Drydock, task_id: str | None, task_id_opt: str | None,
                      output: str | None) -> None:
    """The build data the task (and the tasks below it) collected."""
    dd.emit(dd.request("GET", f"/tasks/{_task_id(task_id, task_id_opt)}/builddata"),
            None, output)


@click.command("delete")
@click.option("--days", "-d", type=int, help="Keep the tasks that finished within these days.")
@output_option
@click.pass_obj
def delete_command(dd: Drydock, days: int | None, output: str | None) -> None:
    """Purge the tasks that finished more than --days days ago (active ones stay)."""
    if days is None:
        raise click.UsageError("The number of days must be specified using --days or -d")
    body = dd.request("DELETE", "/tasks", params={"days": days})
    how = output or dd.output
    if how == "table":
        status = as_object(body)
        details = as_object(status.get("details"))
        click.echo(f"{status.get('message')} {details.get('purged_tasks', 0)} task(s) purged.")
        return
    dd.emit(body, None, output)


def register(task: click.Group) -> None:
    for command in (create_command, list_command, show_command, builddata_command,
                    delete_command):
        task.add_command(command)
