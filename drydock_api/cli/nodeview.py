"""`drydock node list|show|retire|builddata`: nodes as Drydock sees them (MAAS, BMC, records)
and the build data collected for them."""

from __future__ import annotations

import click

from common.jsontypes import JSONObject
from common.urlpath import node_path
from drydock_api.cli.session import Drydock, Params, output_option

# Airship's `drydock node list` columns, and Berth's retirement
NODE_COLUMNS = [("Node Name", "hostname"), ("Status", "status_name"), ("CPUs", "cpu_count"),
                ("Memory", "memory"), ("PXE MAC", "boot_mac"), ("Mgmt IP", "boot_ip"),
                ("IPMI IP", "power_address"), ("Power State", "power_state"),
                ("Retired", "retired")]
DESIGN_REF = click.option("--design-ref", "-d", envvar="DESIGN_REF", default=None,
                          help="The design (or DESIGN_REF; default: the newest task's).")


def _params(design_ref: str | None, **more: str | None) -> Params:
    params = {"design_ref": design_ref, **more}
    return {k: v for k, v in params.items() if v is not None}


@click.command("list")
@DESIGN_REF
@click.option("--retired/--unretired", default=None, help="Only retired (unretired) nodes.")
@output_option
@click.pass_obj
def list_command(dd: Drydock, design_ref: str | None, retired: bool | None,
                 output: str | None) -> None:
    """List the nodes: MAAS status and hardware, BMC power state, retirement."""
    flag = None if retired is None else ("true" if retired else "false")
    dd.emit(dd.request("GET", "/nodes", params=_params(design_ref, retired=flag)),
            NODE_COLUMNS, output)


@click.command("show")
@click.argument("name")
@DESIGN_REF
@output_option
@click.pass_obj
def show_command(dd: Drydock, name: str, design_ref: str | None, output: str | None) -> None:
    """Show one node."""
    node = dd.request("GET", node_path("/nodes", name), params=_params(design_ref))
    dd.emit(node, None, output)


@click.command("retire")
@click.argument("name")
@click.option("--reason", default=None, help="Why (kept on the node).")
@click.option("--undo", is_flag=True, help="Unretire the node instead.")
@DESIGN_REF
@output_option
@click.pass_obj
def retire_command(dd: Drydock, name: str, reason: str | None, undo: bool,
                   design_ref: str | None, output: str | None) -> None:
    """Retire a node (tear it down first), or with --undo unretire it."""
    if undo and reason:
        raise click.UsageError("--reason is for retiring, not with --undo")
    body: JSONObject = {"retired": not undo}
    if reason:
        body["retired_reason"] = reason
    node = dd.request("PATCH", node_path("/nodes", name), json=body,
                      params=_params(design_ref))
    dd.emit(node, None if (output or dd.output) != "table" else NODE_COLUMNS, output)


@click.command("builddata")
@click.argument("nodename")
@click.option("--latest/--no-latest", default=True, show_default=True,
              help="Only the newest item of each generator.")
@output_option
@click.pass_obj
def builddata_command(dd: Drydock, nodename: str, latest: bool, output: str | None) -> None:
    """The build data collected for a node (YAML unless -o json)."""
    items = dd.request("GET", node_path("/nodes", nodename, "/builddata"),
                       params={"latest": "true" if latest else "false"})
    dd.emit(items, None, output)


def register(node: click.Group) -> None:
    for command in (list_command, show_command, retire_command, builddata_command):
        node.add_command(command)
