"""`shipyard plan ACTION`: what an action would do now (blockers first); `describe plan ID`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click
from rich.table import Table

from shipyard_api.cli.actions import parse_params, strip_kind
from shipyard_api.cli.session import Shipyard

FINDING_COLUMNS = [("Node", "node"), ("From", "source"), ("Message", "message")]
GROUP_COLUMNS = [("#", "position"), ("Group", "name"), ("Critical", "critical"),
                 ("Depends on", "depends_on"), ("Nodes", "nodes"),
                 ("Success criteria", "success_criteria")]
SITE_NODE_COLUMNS = [("Node", "node"), ("Groups", "groups"), ("BMC", "bmc"), ("MAAS", "maas")]
NODE_HEADERS = ("Node", "Path", "Evict", "Skipped", "PDBs", "Locks", "etcd after",
                "Pending", "BMC", "MAAS", "Disks")


def _join(items: Iterable[object] | None) -> str:
    return ", ".join(str(i) for i in items or [])


def _etcd(entries: list[dict[str, Any]]) -> str:
    out = []
    for e in entries or []:
        if "after" in e:
            out.append(f"{e['cluster']}: {e['after']['healthy']}/{e['after']['members']} "
                       f"healthy, quorum {e['after']['quorum']}, min {e['threshold']}"
                       + (" (leader moves)" if e.get("leader_move") else ""))
            both = e.get("after_with_leaving")
            if both:
                out[-1] += (f"; with {_join(both['also_leaving'])} gone too: "
                            f"{both['healthy']}/{both['members']} healthy")
        else:
            out.append(f"{e.get('cluster')}: {e.get('error', 'unknown')}")
    return "; ".join(out)


def node_row(n: dict[str, Any]) -> list[str]:
    drain, metal = n.get("drain") or {}, n.get("baremetal") or {}
    bmc = metal.get("bmc") or {}
    wipe = metal.get("wipe") or {}
    budgets = [f"{b['budget']} allows {b['disruptions_allowed']}"
               for b in drain.get("budgets") or []]
    return [str(n.get("node")), str((n.get("path") or {}).get("path") or "refused"),
            str(len(drain.get("evict") or [])),
            _join(f"{p['pod']} ({p['reason']})" for p in drain.get("skipped") or []),
            _join(budgets), _join(drain.get("eviction_locks")), _etcd(n.get("etcd") or []),
            _join(p["pod"] for p in (n.get("capacity") or {}).get("pending") or []),
            f"{bmc.get('power_state') or 'unreachable'}" if bmc else "",
            str(metal.get("maas_status") or ""),
            _join(f"{d['disk']} {d['result']}" for d in wipe.get("disks") or [])]


def show_plan(sy: Shipyard, plan: dict[str, Any]) -> None:
    """Blockers first, then warnings, nodes, groups, and how to act on the plan."""
    if sy.output != "table":
        sy.emit(plan)
        return
    click.echo(f"Plan {plan['id']} of {plan['action']}: {plan['verdict'].upper()} "
               f"(expires {plan['expires']})")
    for key in ("blockers", "warnings"):
        if plan[key]:
            sy.emit(plan[key], FINDING_COLUMNS, title=key.capitalize())
    if plan["nodes"] and plan["action"] == "redeploy_server":
        nodes = Table(title="Nodes")
        for header in NODE_HEADERS:
            nodes.add_column(header)
        for n in plan["nodes"]:
            nodes.add_row(*node_row(n))
        sy.console.print(nodes)
        for n in plan["nodes"]:
            if (n.get("path") or {}).get("reason"):
                click.echo(f"{n['node']}: {n['path']['reason']}")
    if plan["groups"]:
        sy.emit([{**g, "depends_on": _join(g["depends_on"]), "nodes": _join(g["nodes"]),
                  "success_criteria": _join(f"{k}={v:g}" for k, v in
                                            g["success_criteria"].items()) or "none"}
                 for g in plan["groups"]], GROUP_COLUMNS, title="Groups, in order")
        sy.emit([_site_node(n) for n in plan["nodes"]], SITE_NODE_COLUMNS, title="Nodes")
    if plan["verdict"] != "blocked":
        click.echo(f"Act on it: shipyard create action {plan['action']} "
                   + "".join(f"--param {k}={_value(v)} " for k, v in _asked(plan).items())
                   + f"--plan {plan['id']}")


def _site_node(n: dict[str, Any]) -> dict[str, Any]:
    metal = n.get("baremetal") or {}
    bmc = metal.get("bmc") or {}
    return {"node": n.get("node"), "groups": _join(n.get("groups")),
            "bmc": bmc.get("power_state") or f"unreachable: {bmc.get('error')}",
            "maas": metal.get("maas_status") or "not in MAAS"}


def _asked(plan: dict[str, Any]) -> dict[str, Any]:
    """The parameters to give `create action` (those the action sets itself left out)."""
    implied = plan["action"] != "redeploy_server" or \
        plan["parameters"].get("target-revision") == "successful-site-action"
    return {k: v for k, v in plan["parameters"].items()
            if v is not None and not (k == "target-revision" and implied)}


def _value(v: object) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return ",".join(v) if isinstance(v, list) else str(v)


@click.command("plan")
@click.argument("name")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Action parameter (repeatable), as for `create action`.")
@click.option("--allow-intermediate-commits", is_flag=True,
              help="Plan deploy_site/update_site despite intermediate commits.")
@click.option("-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]),
              default=None, help="Output format (also accepted before `plan`).")
@click.pass_obj
def plan_command(sy: Shipyard, name: str, params: tuple[str, ...],
                 allow_intermediate_commits: bool, output: str | None) -> None:
    """Plan the action NAME: what it would do now, and what would stop it. Changes nothing."""
    parameters = parse_params(params)
    if allow_intermediate_commits:
        parameters["allow-intermediate-commits"] = "true"
    if output:
        sy.output = output
    show_plan(sy, sy.request("POST", "/plans", json={"name": name, "parameters": parameters}))


@click.command("plan")
@click.argument("plan_id", metavar="PLAN_ID")
@click.pass_obj
def describe_plan(sy: Shipyard, plan_id: str) -> None:
    """Show a stored plan."""
    show_plan(sy, sy.request("GET", f"/plans/{strip_kind(plan_id, 'plan')}"))


def register(cli: click.Group, describe: click.Group) -> None:
    cli.add_command(plan_command)
    describe.add_command(describe_plan)
