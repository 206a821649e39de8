"""`berth up`: the files it writes for the services, and the services it starts."""

from __future__ import annotations

import configparser
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
import requests
import sqlalchemy
import yaml

from berth_launcher.pgcluster import PgCluster, PgClusterError
from berth_launcher.up import Up
from sitesim.ports import free_port
from sitesim.site import SitePorts

ROOT = Path(__file__).resolve().parents[3]
ENV_KEYS = {"SHIPYARD_URL", "PROMENADE_URL", "DRYDOCK_URL", "BERTH_TOKEN", "KUBECONFIG",
            "KUBE_API_URL", "MAAS_URL", "MAAS_API_KEY", "REDFISH_URL", "SITESIM_URL",
            "ETCD_ENDPOINTS", "DESIGN_REF"}


def free_ports(n):
    return [free_port() for _ in range(n)]


def read_env(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_up_writes_design_tokens_configs_and_env(tmp_path):
    ports = dict(zip(("shipyard", "promenade", "drydock"), free_ports(3), strict=True))
    runner = Up(str(ROOT / "etc/sites/demo.yaml"), tmp_path, SitePorts(), with_services=False,
                service_ports=ports)
    try:
        env = runner.start()
        assert set(env) == ENV_KEYS
        assert read_env(tmp_path / "env") == env
        assert env["DESIGN_REF"] == f"file://{(tmp_path / 'site-design.yaml').resolve()}"
        docs = list(yaml.safe_load_all((tmp_path / "site-design.yaml").read_text()))
        assert sum(d["schema"] == "drydock/BaremetalNode/v1" for d in docs) == 6
        tokens = yaml.safe_load((tmp_path / "tokens.yaml").read_text())
        assert tokens[env["BERTH_TOKEN"]]["roles"] == ["admin"]
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(tmp_path / "drydock.conf")
        assert conf["auth"]["strategy"] == "token"
        assert conf["auth"]["service_token"] in tokens
        assert conf["database"]["connection"].endswith("drydock.db")
        assert conf["maas"]["url"] == env["MAAS_URL"]
        assert conf["peers"]["promenade_url"] == env["PROMENADE_URL"]
        assert requests.get(env["SITESIM_URL"] + "/nodes/node01", timeout=10).ok
        assert Path(env["KUBECONFIG"]).exists()
        assert len(env["ETCD_ENDPOINTS"].split(",")) == 3
    finally:
        runner.stop()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("shipyard-api") is None and
                    not (Path(ROOT / ".venv/bin/shipyard-api")).exists(),
                    reason="service console scripts are not installed")
def test_up_starts_the_three_services_and_stops_them(tmp_path):
    ports = dict(zip(("shipyard", "promenade", "drydock"), free_ports(3), strict=True))
    (tmp_path / "drydock.db").write_text("a database of an earlier run's site")
    runner = Up(str(ROOT / "etc/sites/demo.yaml"), tmp_path, SitePorts(), service_ports=ports)
    try:
        env = runner.start()
        assert "earlier run" not in (tmp_path / "drydock.db").read_bytes().decode(errors="replace")
        for key in ("SHIPYARD_URL", "PROMENADE_URL", "DRYDOCK_URL"):
            assert requests.get(env[key] + "/api/v1.0/health", timeout=10).status_code == 204
        ref = env["DESIGN_REF"]
        assert ref.startswith(f"deckhand+{env['SHIPYARD_URL']}/api/v1.0/revisions/")
        assert f"DESIGN_REF={ref}" in (tmp_path / "env").read_text()
        rendered = requests.get(ref.removeprefix("deckhand+"), timeout=10,
                                headers={"X-Auth-Token": env["BERTH_TOKEN"]})
        assert "drydock/BaremetalNode/v1" in rendered.text
        revision = ref.split("/revisions/")[1].split("/")[0]
        tags = requests.get(f"{env['SHIPYARD_URL']}/api/v1.0/revisions/{revision}/tags",
                            headers={"X-Auth-Token": env["BERTH_TOKEN"]}, timeout=10).json()
        assert "site-action-success" in str(tags)
        procs = list(runner.procs.values())
    finally:
        runner.stop()
    assert all(p.poll() is not None for p in procs)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/lib/postgresql/15/bin/initdb").exists(),
                    reason="PostgreSQL server binaries are not installed")
def test_up_postgres_runs_two_apis_and_two_workers_each_and_stops_everything():
    berth_dir = Path(tempfile.mkdtemp(prefix="berth-up-pg-"))
    berth_dir.chmod(0o755)  # the postgres user must reach berth_dir/postgres
    free = free_ports(6)
    runner = Up(str(ROOT / "etc/sites/demo.yaml"), berth_dir, SitePorts(),
                service_ports=dict(zip(("shipyard", "promenade", "drydock"), free[:3],
                                       strict=True)),
                postgres=True, second_ports={"shipyard": free[3], "drydock": free[4]},
                postgres_port=free[5])
    try:
        env = runner.start()
        assert env["SHIPYARD_DATABASE_URL"].startswith("postgresql+psycopg://")
        for key in ("SHIPYARD_URL", "SHIPYARD_URL_2", "DRYDOCK_URL", "DRYDOCK_URL_2",
                    "PROMENADE_URL"):
            assert requests.get(env[key] + "/api/v1.0/health", timeout=10).status_code == 204
        headers = {"X-Auth-Token": env["BERTH_TOKEN"]}
        # Both Shipyard APIs read the revision committed through the first (one database).
        revisions = [requests.get(env[key] + "/api/v1.0/revisions", headers=headers,
                                  timeout=10).json()["results"]
                     for key in ("SHIPYARD_URL", "SHIPYARD_URL_2")]
        assert revisions[0] == revisions[1] and len(revisions[0]) == 1
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(berth_dir / "shipyard.conf")
        assert conf["database"]["connection"] == env["SHIPYARD_DATABASE_URL"]
        assert conf["workflow"]["api_workers"] == "0"
        conf.read(berth_dir / "drydock.conf")
        assert conf["worker"]["threads"] == "0"
        workers = [name for name in runner.procs if "-worker-" in name]
        assert sorted(workers) == ["drydock-worker-1", "drydock-worker-2",
                                   "shipyard-worker-1", "shipyard-worker-2"]
        assert all(runner.procs[w].poll() is None for w in workers)
        summary = "\n".join(runner.summary())
        assert f"127.0.0.1:{free[5]}" in summary and "shipyard-2" in summary
        procs = list(runner.procs.values())
    finally:
        runner.stop()
        pg_running = (berth_dir / "postgres" / "data" / "postmaster.pid").exists()
        shutil.rmtree(berth_dir, ignore_errors=True)
    assert all(p.poll() is not None for p in procs)
    assert not pg_running
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", free[5]), timeout=1)


def test_postgres_cluster_without_server_binaries_says_what_to_install(tmp_path):
    cluster = PgCluster(tmp_path / "pg", 5999, bin_dir=tmp_path / "nowhere")
    with pytest.raises(PgClusterError, match="install Debian's postgresql package"):
        cluster.start()
    cluster.stop()  # never started: nothing to do
    assert not (tmp_path / "pg").exists()


@pytest.mark.skipif(not Path("/usr/lib/postgresql/15/bin/initdb").exists(),
                    reason="PostgreSQL server binaries are not installed")
def test_postgres_cluster_left_running_is_stopped_and_replaced_by_a_fresh_one():
    root = Path(tempfile.mkdtemp(prefix="berth-pg-"))
    root.chmod(0o755)
    port = free_ports(1)[0]
    first = PgCluster(root / "pg", port).start()
    try:
        first.create_database("leftover")
        second = PgCluster(root / "pg", port).start()  # as after a SIGKILLed berth up
        try:
            engine = sqlalchemy.create_engine(second.url("postgres"))
            with engine.connect() as conn:
                names = conn.execute(sqlalchemy.text("SELECT datname FROM pg_database")).scalars()
                assert "leftover" not in set(names)
            engine.dispose()
        finally:
            second.stop()
    finally:
        first.stop()
        shutil.rmtree(root, ignore_errors=True)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
