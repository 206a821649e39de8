"""The `sitesim` command: run a simulated site from a site YAML, or generate a large one."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from sitesim.generate import generate_site
from sitesim.processes import stop_event_on_signals
from sitesim.site import Site, SitePorts
from sitesim.siteconfig import SiteConfigError, load_site, parse_site


@click.group()
def main() -> None:
    """A simulated site: Kubernetes API, MAAS, Redfish and IPMI BMCs, real etcd."""


@main.command()
@click.option("--site", "site_file", default="etc/sites/demo.yaml", show_default=True,
              type=click.Path(exists=True, dir_okay=False), help="Site YAML to start.")
@click.option("--free-ports", is_flag=True, help="Use free ports instead of 7000/6443/5240/...")
@click.option("--design", "design_out", type=click.Path(dir_okay=False),
              help="Also write the site's design documents to this file.")
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="Instead of --site: a generated site of this many nodes (see generate).")
@click.option("--racks", type=click.IntRange(min=1), default=100, show_default=True,
              help="Racks of the generated site (with --nodes).")
def run(site_file: str, free_ports: bool, design_out: str | None, nodes: int | None,
        racks: int) -> None:
    """Serve the site until SIGTERM or Ctrl-C."""
    try:
        spec = load_site(site_file) if nodes is None else \
            parse_site(generate_site(nodes, min(racks, nodes), min(3, nodes)))
    except SiteConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    site = Site(spec, ports=SitePorts() if free_ports else SitePorts.standard()).start()
    stop = stop_event_on_signals()
    try:
        if design_out:
            Path(design_out).write_text(site.design_yaml())
        click.echo(yaml.safe_dump(site.info(), sort_keys=False))
        sys.stdout.flush()
        stop.wait()
    finally:
        site.stop()


@main.command()
@click.option("--nodes", type=int, required=True)
@click.option("--racks", type=int, default=10, show_default=True)
@click.option("--etcd-members", type=int, default=3, show_default=True)
@click.option("--name", default="scale", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="File (default stdout).")
def generate(nodes: int, racks: int, etcd_members: int, name: str, output: str | None) -> None:
    """Write a large site YAML."""
    try:
        site = generate_site(nodes, racks, etcd_members, name=name)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    text = yaml.safe_dump(site, sort_keys=False)
    if output:
        Path(output).write_text(text)
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("site_file", type=click.Path(exists=True, dir_okay=False))
def check(site_file: str) -> None:
    """Validate a site YAML (every problem listed)."""
    try:
        load_site(site_file)
    except SiteConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{site_file}: ok")
