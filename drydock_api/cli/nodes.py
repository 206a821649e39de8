"""`drydock node check-bmc`: hold a Redfish BMC to Drydock's interoperability profile and
say, requirement by requirement, what passes and what fails (exit 0, 1; 2: not checked)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.table import Table

from common.errors import BerthError
from drydock_api.drivers.redfish.check import PROFILE_ENV, CheckReport, check_bmc

EXIT_FAILED, EXIT_NOT_CHECKED = 1, 2
STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim"}


def _table(report: CheckReport) -> Table:
    out = Table(title=f"{report.address} against {Path(report.profile).name}")
    for header in ("RESULT", "REQUIREMENT", "DETAIL"):
        out.add_column(header)
    for req in report.requirements:
        where = ""
        if req.result == "FAIL" and req.uris:
            more = f" (+{len(req.uris) - 1} more)" if len(req.uris) > 1 else ""
            where = f" at {req.uris[0]}{more}"
        out.add_row(f"[{STYLE.get(req.result, '')}]{req.result}[/]", req.name,
                    req.message + where)
    return out


def _verdict(report: CheckReport) -> str:
    counts = ", ".join(f"{n} {k.lower()}" for k, n in report.counts().items())
    if report.passed:
        return f"PASS: the BMC meets every mandatory requirement ({counts})."
    names = "; ".join(r.name for r in report.failed)
    lines = [f"FAIL: {len(report.failed)} requirement(s) not met: {names} ({counts})."]
    lines += [f"- {r.name}: {r.purpose}" for r in report.failed if r.purpose]
    return "\n".join(lines)


def _emit(report: CheckReport, output: str) -> None:
    if output in ("json", "yaml"):
        body: dict[str, object] = {**asdict(report), "passed": report.passed,
                                "counts": report.counts()}
        click.echo(json.dumps(body, indent=2) if output == "json"
                   else yaml.safe_dump(body, sort_keys=False).rstrip())
        return
    Console(width=None if sys.stdout.isatty() else 200).print(_table(report))
    click.echo(_verdict(report))


@click.command("check-bmc")
@click.option("--address", required=True,
              help="The BMC's Redfish address (https://10.0.0.5, http://host:8000).")
@click.option("--username", required=True, help="BMC account.")
@click.option("--password", required=True, envvar="DRYDOCK_BMC_PASSWORD",
              help="BMC password (or DRYDOCK_BMC_PASSWORD).")
@click.option("--system", default=None,
              help="The node's System: its Id or path (the design's oob system id). "
                   "Default: every System the account can read.")
@click.option("--profile", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"Interoperability profile (default: ${PROFILE_ENV}, else "
                   "etc/redfish/drydock-profile.json of the source tree).")
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="Seconds to wait for each BMC answer.")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write the validator's HTML report and log here.")
@click.pass_obj
def check_bmc_command(obj: object, address: str, username: str, password: str,
                      system: str | None, profile: Path | None, timeout: float,
                      report_dir: Path | None) -> None:
    """Check a Redfish BMC against what Drydock needs, before enrolling it.

    Runs DMTF's redfish-interop-validator with Drydock's interoperability profile on the
    resources Drydock uses (service root, Systems, power, boot override, reset types,
    storage, drives and their secure erase, tasks). Exits 0 when every mandatory
    requirement holds, 1 when one fails (each is named), 2 when the BMC could not be
    checked (unreachable, credentials refused, not Redfish, no profile).
    """
    try:
        report = check_bmc(address, username, password, profile=profile, system=system,
                           timeout=timeout, report_dir=report_dir)
    except BerthError as exc:
        click.echo(f"error: {exc.message}", err=True)
        raise SystemExit(EXIT_NOT_CHECKED) from exc
    _emit(report, getattr(obj, "output", "table"))
    if not report.passed:
        raise SystemExit(EXIT_FAILED)


def register(node: click.Group) -> None:
    node.add_command(check_bmc_command)
