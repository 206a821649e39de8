"""`berth up` / `berth down` / `berth status`: the simulated site plus Shipyard, Promenade and
Drydock on it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import requests

from berth_launcher.berthconfig import (
    DB_SERVICES,
    POSTGRES_PORT,
    SECOND_API_PORTS,
    SERVICES,
    WORKER_SERVICES,
    Sections,
    env_lines,
    postgres_overrides,
    service_sections,
    write_env,
    write_ini,
    write_tokens,
)
from berth_launcher.dbcli import db, upgrader
from berth_launcher.launch import Runner, serve, stop_launcher
from berth_launcher.pgcluster import PgCluster, PgClusterError
from berth_launcher.ports import PortLayout
from berth_launcher.services import (
    UpError,
    start_service,
    start_worker,
    stop_process,
    wait_healthy,
)
from berth_launcher.status import ENV_FILE, status
from sitesim.generate import generate_site
from sitesim.site import Site, SitePorts
from sitesim.siteconfig import SiteConfigError, SiteSpec, load_site, parse_site

CHUNK_BYTES = 8 * 1024 * 1024


def running_summary(site: Site, services: dict[str, int]) -> list[str]:
    """One line per running component, for the operator."""
    spec = site.spec
    ipmi = ", ".join(f"{n} udp/{p} ({spec.node(n).bmc.impl})" for n, p in site.ipmi_ports.items())
    lines = [f"site {spec.name!r}: {len(spec.nodes)} nodes over "
             f"{len({n.rack for n in spec.nodes})} racks",
             f"sitesim admin API   {site.urls['sitesim']}",
             f"Kubernetes API      {site.urls['kube']} (kube-apiserver, controller-manager, "
             "scheduler; kwok kubelets)",
             f"MAAS                {site.urls['maas']}",
             f"Redfish (sushy-tools emulator) {site.urls['redfish']}"]
    if ipmi:
        lines.append(f"IPMI BMCs           {ipmi}")
    if "ironic" in site.urls:
        lines.append(f"Ironic (provisioner) {site.urls['ironic']} (standalone, no auth)")
    for name, endpoints in site.endpoints().etcd_endpoints.items():
        lines.append(f"etcd {name:<14} {', '.join(endpoints)}")
    lines += [f"{name:<19} http://127.0.0.1:{port}" for name, port in services.items()]
    return lines


def link_kubectl(site: Site, bin_dir: Path) -> None:
    """bin_dir/kubectl: the kubectl built with the site's Kubernetes (within its version skew)."""
    if site.kube is None:
        return
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "kubectl"
    link.unlink(missing_ok=True)
    link.symlink_to(site.kube.plane.binaries.kubectl)


def write_site_files(site: Site, berth_dir: Path, ports: dict[str, int] = SERVICES,
                     overrides: dict[str, Sections] | None = None) -> dict[str, str]:
    """Design, tokens, service configs; returns the environment for .berth/env (written by
    the caller once everything is ready)."""
    design = berth_dir / "site-design.yaml"
    design.write_text(site.design_yaml())
    admin_token, service_token = write_tokens(berth_dir / "tokens.yaml")
    kubeconfig = berth_dir / "kubeconfig"
    shutil.copyfile(site.kubeconfig, kubeconfig)
    promenade_kubeconfig = berth_dir / "promenade.kubeconfig"
    shutil.copyfile(site.promenade_kubeconfig, promenade_kubeconfig)
    link_kubectl(site, berth_dir / "bin")
    facts: dict[str, Any] = {**site.urls, "kubeconfig": str(kubeconfig),
                             "promenade_kubeconfig": str(promenade_kubeconfig),
                             "lease_namespace": site.lease_namespace,
                             "maas_api_key": site.spec.maas_api_key,
                             "berth_dir": str(berth_dir),
                             "shipyard_url": f"http://127.0.0.1:{ports['shipyard']}"}
    for name in ports:
        write_ini(berth_dir / f"{name}.conf",
                  service_sections(name, berth_dir, service_token, facts, ports,
                                   (overrides or {}).get(name)))
    endpoints = [e for c in site.endpoints().etcd_endpoints.values() for e in c]
    env = {f"{name.upper()}_URL": f"http://127.0.0.1:{port}" for name, port in ports.items()}
    env.update(BERTH_TOKEN=admin_token, KUBECONFIG=str(kubeconfig), KUBE_API_URL=site.urls["kube"],
               MAAS_URL=site.urls["maas"], MAAS_API_KEY=site.spec.maas_api_key,
               REDFISH_URL=site.urls["redfish"], SITESIM_URL=site.urls["sitesim"],
               ETCD_ENDPOINTS=",".join(endpoints), DESIGN_REF=f"file://{design.resolve()}")
    if "ironic" in site.urls:  # an Ironic site: its API, for curl and openstack baremetal
        env["IRONIC_URL"] = site.urls["ironic"]
    return env


def commit_design(shipyard_url: str, token: str, design: str, deployed: bool) -> str:
    """Stage and commit the site design in Shipyard; the committed revision's design ref.

    When the simulated site starts deployed exactly as this design says (`deployed`), the
    revision is also tagged `site-action-success` (dag_id `berth-up`): actions whose default
    target is the last successful site action (redeploy_server) work on a fresh `berth up`."""
    api = f"{shipyard_url}/api/v1.0"
    headers = {"X-Auth-Token": token}
    for index, chunk in enumerate(design_chunks(design)):
        collection, mode = ("site", "replace") if index == 0 else (f"site-{index + 1}", "append")
        staged = requests.post(f"{api}/configdocs/{collection}?buffermode={mode}",
                               data=chunk.encode(), timeout=300,
                               headers={**headers, "Content-Type": "application/x-yaml"})
        if staged.status_code != 201:
            raise click.ClickException(f"staging the site design in Shipyard failed: "
                                       f"{staged.text}")
    committed = requests.post(f"{api}/commitconfigdocs", headers=headers, timeout=600)
    if committed.status_code != 200:
        raise click.ClickException(
            f"committing the site design into Shipyard failed: {committed.text}")
    revisions = requests.get(f"{api}/revisions", headers=headers, timeout=30).json()["results"]
    newest = max(revisions, key=lambda r: int(r["id"]))
    design_ref = f"deckhand+{api}/revisions/{newest['id']}/rendered-documents"
    if not deployed:
        return design_ref
    tagged = requests.post(f"{api}/revisions/{newest['id']}/tags/site-action-success",
                           json={"dag_id": "berth-up"}, headers=headers, timeout=30)
    if tagged.status_code not in (200, 201):
        raise click.ClickException(f"tagging the site design failed: {tagged.text}")
    return design_ref


def design_chunks(design: str, limit: int = CHUNK_BYTES) -> list[str]:
    """The multi-document design in pieces under `limit` bytes (Shipyard refuses request
    bodies over 10 MiB; a 10,000-node design is about 14 MB), cut between documents."""
    docs = [f"---\n{d.rstrip()}\n" for d in design.removeprefix("---\n").split("\n---\n")]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for doc in docs:
        if current and size + len(doc) > limit:
            chunks.append("".join(current))
            current, size = [], 0
        current.append(doc)
        size += len(doc)
    chunks.append("".join(current))
    return chunks


def clear_previous_state(berth_dir: Path) -> None:
    """Remove the SQLite databases of an earlier run: they describe a site that is gone
    (tasks, actions, retirements, reboot requests of nodes that no longer exist)."""
    for service in DB_SERVICES:
        for path in berth_dir.glob(f"{service}.db*"):
            path.unlink(missing_ok=True)


class Up:
    """Everything `berth up` started, stopped in reverse order.

    With `postgres`, Shipyard, Drydock and Promenade use databases on a throwaway PostgreSQL
    cluster under berth_dir/postgres; Shipyard and Drydock run as two API processes each (the
    second on `second_ports`) plus two worker processes each.

    The env file (`berth_dir/env`) is written once, when `start()` is done: the site runs, and
    with services, each answers /health and the site design is committed (and tagged). Before
    that it does not exist; `stop()` removes it. `tie_to_launcher`: the services get SIGTERM
    when this process ends (PR_SET_PDEATHSIG; start them from the main thread)."""

    def __init__(self, site_file: str | SiteSpec, berth_dir: Path, ports: SitePorts,
                 with_services: bool = True, service_ports: dict[str, int] | None = None,
                 postgres: bool = False, second_ports: dict[str, int] | None = None,
                 postgres_port: int = POSTGRES_PORT, tie_to_launcher: bool = False) -> None:
        self.berth_dir = berth_dir
        self.tie_to_launcher = tie_to_launcher
        self.service_ports = dict(service_ports or SERVICES)
        spec = site_file if isinstance(site_file, SiteSpec) else load_site(site_file)
        self.site = Site(spec, ports=ports, workdir=berth_dir / "site")
        self.with_services = with_services
        self.postgres = postgres
        self.second_ports = dict(second_ports or SECOND_API_PORTS) if postgres else {}
        self.pg = PgCluster(berth_dir / "postgres", postgres_port) if postgres else None
        self.databases: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env: dict[str, str] = {}

    def api_processes(self) -> dict[str, tuple[str, int]]:
        """Process name -> (service, port) of every API process."""
        apis = {name: (name, port) for name, port in self.service_ports.items()}
        apis.update({f"{name}-2": (name, port) for name, port in self.second_ports.items()})
        return apis

    def worker_processes(self) -> dict[str, str]:
        """Process name -> service of every worker process."""
        if not self.postgres:
            return {}
        return {f"{name}-worker-{n}": name for name in WORKER_SERVICES for n in (1, 2)}

    def start(self) -> dict[str, str]:
        self.berth_dir.mkdir(parents=True, exist_ok=True)
        (self.berth_dir / ENV_FILE).unlink(missing_ok=True)
        clear_previous_state(self.berth_dir)
        try:
            self.site.start()
            overrides = self._start_postgres()
            self.env = write_site_files(self.site, self.berth_dir, self.service_ports, overrides)
            self.env.update(self._postgres_env())
            if self.with_services:
                self._start_services()
            write_env(self.berth_dir / ENV_FILE, self.env)
        except BaseException:
            self.stop()
            raise
        return self.env

    def _start_postgres(self) -> dict[str, Sections]:
        if self.pg is None:
            return {}
        try:
            self.pg.start()
            self.databases = {name: self.pg.create_database(name) for name in DB_SERVICES}
            for name, url in self.databases.items():
                upgrader(name)(url, "head")
        except PgClusterError as exc:
            raise UpError(f"PostgreSQL: {exc}; see {self.pg.log}") from exc
        return postgres_overrides(self.databases)

    def _postgres_env(self) -> dict[str, str]:
        env = {f"{name.upper()}_URL_2": f"http://127.0.0.1:{port}"
               for name, port in self.second_ports.items()}
        env.update({f"{name.upper()}_DATABASE_URL": url for name, url in self.databases.items()})
        return env

    def _start_services(self) -> None:
        apis = self.api_processes()
        for proc_name, (service, port) in apis.items():
            self.procs[proc_name] = start_service(service, port, self.berth_dir /
                                                  f"{service}.conf", self._log(proc_name),
                                                  with_parent=self.tie_to_launcher)
        for proc_name, (_, port) in apis.items():
            wait_healthy(proc_name, f"http://127.0.0.1:{port}", self.procs[proc_name],
                         self._log(proc_name))
        for proc_name, service in self.worker_processes().items():
            self.procs[proc_name] = start_worker(service, self.berth_dir / f"{service}.conf",
                                                 self._log(proc_name),
                                                 with_parent=self.tie_to_launcher)
        self.env["DESIGN_REF"] = commit_design(
            f"http://127.0.0.1:{self.service_ports['shipyard']}",
            self.env["BERTH_TOKEN"], (self.berth_dir / "site-design.yaml").read_text(),
            deployed=all(node.state == "deployed" for node in self.site.spec.nodes))
        for proc_name in self.worker_processes():
            if self.procs[proc_name].poll() is not None:
                raise UpError(f"{proc_name} exited with {self.procs[proc_name].returncode}; "
                              f"see {self._log(proc_name)}")

    def _log(self, proc_name: str) -> Path:
        return self.berth_dir / f"{proc_name}.log"

    def summary(self) -> list[str]:
        """What runs where, one line each."""
        if not self.with_services:
            return running_summary(self.site, {})
        apis = {name: port for name, (_, port) in self.api_processes().items()}
        lines = running_summary(self.site, apis)
        for name, proc in self.procs.items():
            if name in self.worker_processes():
                lines.append(f"{name:<19} pid {proc.pid}")
        if self.pg is not None:
            lines.append(f"PostgreSQL          127.0.0.1:{self.pg.port} (data {self.pg.data}, "
                         f"databases {', '.join(self.databases)})")
        return lines

    def stop(self) -> None:
        (self.berth_dir / ENV_FILE).unlink(missing_ok=True)
        for proc in reversed(list(self.procs.values())):
            stop_process(proc)
        self.procs.clear()
        self.site.stop()
        if self.pg is not None:
            self.pg.stop()


@click.group()
def main() -> None:
    """Run Berth on a simulated site."""


PORT_OFFSET_HELP = (
    "Move every port berth up listens on by N, so that two sites run on one machine (each "
    "with its own --dir): Shipyard, Promenade and Drydock on 9000+N, 9001+N and 9002+N, the "
    "sitesim admin API on 7000+N, the Kubernetes API on 6443+N, MAAS on 5240+N, Redfish on "
    "8000+N, the IPMI BMCs on udp/6230+N upwards; with --postgres the second APIs on 9010+N "
    "and 9012+N and PostgreSQL on 5433+N. DIR/env shows the URLs in use.")


@main.command()
@click.option("--site", "site_file", default="etc/sites/demo.yaml", show_default=True,
              type=click.Path(exists=True, dir_okay=False))
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--port-offset", type=int, default=0, show_default=True, help=PORT_OFFSET_HELP)
@click.option("--no-services", is_flag=True, help="Start only the simulated site.")
@click.option("--postgres", is_flag=True,
              help="Shipyard and Drydock on a throwaway PostgreSQL cluster under DIR/postgres, "
                   "two API processes (second ones on 9010+N and 9012+N, N the --port-offset) "
                   "and two workers each.")
@click.option("--postgres-port", type=int, default=None,
              help=f"PostgreSQL's port with --postgres [default: {POSTGRES_PORT}+offset].")
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="Instead of --site: a generated site of this many deployed nodes "
                   "(`sitesim generate`; every 10th node an IPMI BMC, the rest Redfish).")
@click.option("--racks", type=click.IntRange(min=1), default=100, show_default=True,
              help="Racks of the generated site (with --nodes).")
def up(site_file: str, berth_dir: str, port_offset: int, no_services: bool, postgres: bool,
       postgres_port: int | None, nodes: int | None, racks: int) -> None:
    """Start the site and the three services; Ctrl-C, SIGTERM, SIGHUP or `berth down` stops
    them, and they end with berth up however it ends.

    Refuses to start, naming the process, when a port it needs is taken. DIR/env is written
    once, when everything is ready (`berth status --wait` waits for that)."""
    directory = Path(berth_dir).resolve()
    try:
        spec = load_site(site_file) if nodes is None else \
            parse_site(generate_site(nodes, min(racks, nodes), min(3, nodes)))
    except SiteConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    layout = PortLayout(port_offset, postgres,
                        sum(1 for node in spec.nodes if node.bmc.type == "ipmi"))
    pg_port = layout.postgres_port if postgres_port is None else postgres_port

    def make_runner() -> Up:
        return Up(spec, directory, layout.site, with_services=not no_services,
                  service_ports=layout.services, postgres=postgres,
                  second_ports=layout.second_apis, postgres_port=pg_port, tie_to_launcher=True)

    serve(make_runner, directory, layout, lambda runner, env: banner(runner, env, directory))


def banner(runner: Runner, env: dict[str, str], directory: Path) -> None:
    env_file = directory / ENV_FILE
    click.echo("Running:\n  " + "\n  ".join(runner.summary()))
    click.echo(f"\nEnvironment ({env_file}):")
    click.echo(env_lines(env), nl=False)
    click.echo(f"\nTry:  set -a; . {env_file}; set +a; "
               f"export PATH={directory / 'bin'}:$PATH; "
               "kubectl get nodes; curl -s $SITESIM_URL/nodes/node03; berth status")


main.add_command(db)
main.add_command(status)


@main.command()
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--timeout", default=60.0, show_default=True)
def down(berth_dir: str, timeout: float) -> None:
    """Stop a running `berth up` (by the PID in .berth/berth-up.pid)."""
    stop_launcher(Path(berth_dir), timeout)
