"""`berth up` / `berth down`: the simulated site plus Shipyard, Promenade and Drydock on it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click
import requests

from sitesim.berthconfig import SERVICES, env_lines, service_sections, write_ini, write_tokens
from sitesim.dbcli import db
from sitesim.site import Site, SitePorts
from sitesim.siteconfig import SiteConfigError, load_site

PID_FILE = "berth-up.pid"


class UpError(Exception):
    """A service of `berth up` could not be started."""


def find_script(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def start_service(name: str, port: int, config: Path, log: Path) -> subprocess.Popen[bytes]:
    script = find_script(f"{name}-api")
    if script is None:
        raise UpError(f"console script {name}-api not found (is the project installed?)")
    with log.open("ab") as out:
        return subprocess.Popen([script, "--bind", f"127.0.0.1:{port}", "--config-file",
                                 str(config)], stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                env={**os.environ, f"{name.upper()}_CONFIG_FILE": str(config)})


def wait_healthy(name: str, url: str, proc: subprocess.Popen[bytes], log: Path,
                 timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UpError(f"{name} exited with {proc.returncode}; see {log}")
        try:
            if requests.get(f"{url}/api/v1.0/health", timeout=1).status_code in (200, 204):
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise UpError(f"{name} did not become healthy in {timeout:.0f}s; see {log}")


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


def running_summary(site: Site, services: dict[str, int]) -> list[str]:
    """One line per running component, for the operator."""
    spec = site.spec
    ipmi = ", ".join(f"{n} udp/{p} ({spec.node(n).bmc.impl})" for n, p in site.ipmi_ports.items())
    lines = [f"site {spec.name!r}: {len(spec.nodes)} nodes over "
             f"{len({n.rack for n in spec.nodes})} racks",
             f"sitesim admin API   {site.urls['sitesim']}",
             f"Kubernetes API      {site.urls['kube']}",
             f"MAAS                {site.urls['maas']}",
             f"Redfish (sushy-tools emulator) {site.urls['redfish']}"]
    if ipmi:
        lines.append(f"IPMI BMCs           {ipmi}")
    for name, endpoints in site.endpoints().etcd_endpoints.items():
        lines.append(f"etcd {name:<14} {', '.join(endpoints)}")
    lines += [f"{name:<19} http://127.0.0.1:{port}" for name, port in services.items()]
    return lines


def write_site_files(site: Site, berth_dir: Path,
                     ports: dict[str, int] = SERVICES) -> dict[str, str]:
    """Design, tokens, service configs; returns the environment for .berth/env."""
    design = berth_dir / "site-design.yaml"
    design.write_text(site.design_yaml())
    admin_token, service_token = write_tokens(berth_dir / "tokens.yaml")
    kubeconfig = berth_dir / "kubeconfig"
    shutil.copyfile(site.kubeconfig, kubeconfig)
    facts: dict[str, Any] = {**site.urls, "kubeconfig": str(kubeconfig),
                             "maas_api_key": site.spec.maas_api_key,
                             "berth_dir": str(berth_dir),
                             "shipyard_url": f"http://127.0.0.1:{ports['shipyard']}"}
    for name in ports:
        write_ini(berth_dir / f"{name}.conf",
                  service_sections(name, berth_dir, service_token, facts, ports))
    endpoints = [e for c in site.endpoints().etcd_endpoints.values() for e in c]
    env = {f"{name.upper()}_URL": f"http://127.0.0.1:{port}" for name, port in ports.items()}
    env.update(BERTH_TOKEN=admin_token, KUBECONFIG=str(kubeconfig), KUBE_API_URL=site.urls["kube"],
               MAAS_URL=site.urls["maas"], MAAS_API_KEY=site.spec.maas_api_key,
               REDFISH_URL=site.urls["redfish"], SITESIM_URL=site.urls["sitesim"],
               ETCD_ENDPOINTS=",".join(endpoints), DESIGN_REF=f"file://{design.resolve()}")
    (berth_dir / "env").write_text(env_lines(env))
    return env


def commit_design(shipyard_url: str, token: str, design: str) -> str:
    """Stage and commit the site design in Shipyard; the committed revision's design ref."""
    api = f"{shipyard_url}/api/v1.0"
    headers = {"X-Auth-Token": token}
    staged = requests.post(f"{api}/configdocs/site?buffermode=replace", data=design.encode(),
                           headers={**headers, "Content-Type": "application/x-yaml"}, timeout=60)
    committed = requests.post(f"{api}/commitconfigdocs", headers=headers, timeout=300)
    if staged.status_code != 201 or committed.status_code != 200:
        raise click.ClickException(
            f"committing the site design into Shipyard failed: {staged.text} {committed.text}")
    revisions = requests.get(f"{api}/revisions", headers=headers, timeout=30).json()["results"]
    newest = max(revisions, key=lambda r: int(r["id"]))
    return f"deckhand+{api}/revisions/{newest['id']}/rendered-documents"


class Up:
    """Everything `berth up` started, stopped in reverse order."""

    def __init__(self, site_file: str, berth_dir: Path, ports: SitePorts,
                 with_services: bool = True, service_ports: dict[str, int] | None = None) -> None:
        self.berth_dir = berth_dir
        self.service_ports = dict(service_ports or SERVICES)
        self.site = Site(load_site(site_file), ports=ports, workdir=berth_dir / "site")
        self.with_services = with_services
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env: dict[str, str] = {}

    def start(self) -> dict[str, str]:
        self.berth_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.site.start()
            self.env = write_site_files(self.site, self.berth_dir, self.service_ports)
            if self.with_services:
                for name, port in self.service_ports.items():
                    log = self.berth_dir / f"{name}.log"
                    self.procs[name] = start_service(name, port, self.berth_dir / f"{name}.conf",
                                                     log)
                for name, port in self.service_ports.items():
                    wait_healthy(name, f"http://127.0.0.1:{port}", self.procs[name],
                                 self.berth_dir / f"{name}.log")
                self.env["DESIGN_REF"] = commit_design(
                    f"http://127.0.0.1:{self.service_ports['shipyard']}",
                    self.env["BERTH_TOKEN"], (self.berth_dir / "site-design.yaml").read_text())
                (self.berth_dir / "env").write_text(env_lines(self.env))
        except BaseException:
            self.stop()
            raise
        return self.env

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            stop_process(proc)
        self.procs.clear()
        self.site.stop()


@click.group()
def main() -> None:
    """Run Berth on a simulated site."""


@main.command()
@click.option("--site", "site_file", default="etc/sites/demo.yaml", show_default=True,
              type=click.Path(exists=True, dir_okay=False))
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--no-services", is_flag=True, help="Start only the simulated site.")
def up(site_file: str, berth_dir: str, no_services: bool) -> None:
    """Start the site and the three services; Ctrl-C, SIGTERM or `berth down` stops them."""
    directory = Path(berth_dir).resolve()
    try:
        runner = Up(site_file, directory, SitePorts.standard(), with_services=not no_services)
    except SiteConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        env = runner.start()
    except UpError as exc:
        raise click.ClickException(str(exc)) from exc
    pid_file = directory / PID_FILE
    pid_file.write_text(str(os.getpid()))
    try:
        services = runner.service_ports if runner.with_services else {}
        click.echo("Running:\n  " + "\n  ".join(running_summary(runner.site, services)))
        click.echo(f"\nEnvironment ({directory / 'env'}):")
        click.echo(env_lines(env), nl=False)
        click.echo(f"\nTry:  set -a; . {directory / 'env'}; set +a; "
                   "kubectl get nodes; curl -s $SITESIM_URL/nodes/node03")
        sys.stdout.flush()
        stop.wait()
    finally:
        pid_file.unlink(missing_ok=True)
        runner.stop()


main.add_command(db)


@main.command()
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--timeout", default=60.0, show_default=True)
def down(berth_dir: str, timeout: float) -> None:
    """Stop a running `berth up` (by the PID in .berth/berth-up.pid)."""
    pid_file = Path(berth_dir) / PID_FILE
    if not pid_file.exists():
        raise click.ClickException(f"no {pid_file}: berth up is not running here")
    pid = int(pid_file.read_text().strip())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink(missing_ok=True)
        click.echo(f"berth up (pid {pid}) was not running")
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            click.echo(f"stopped berth up (pid {pid})")
            return
        time.sleep(0.1)
    raise click.ClickException(f"berth up (pid {pid}) still running after {timeout:.0f}s")
