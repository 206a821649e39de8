"""`berth up`: the files it writes for the services, and the services it starts."""

from __future__ import annotations

import configparser
import shutil
import socket
from pathlib import Path

import pytest
import requests
import yaml

from sitesim.site import SitePorts
from sitesim.up import Up

ROOT = Path(__file__).resolve().parents[3]
ENV_KEYS = {"SHIPYARD_URL", "PROMENADE_URL", "DRYDOCK_URL", "BERTH_TOKEN", "KUBECONFIG",
            "KUBE_API_URL", "MAAS_URL", "MAAS_API_KEY", "REDFISH_URL", "SITESIM_URL",
            "ETCD_ENDPOINTS", "DESIGN_REF"}


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


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
    runner = Up(str(ROOT / "etc/sites/demo.yaml"), tmp_path, SitePorts(), service_ports=ports)
    try:
        env = runner.start()
        for key in ("SHIPYARD_URL", "PROMENADE_URL", "DRYDOCK_URL"):
            assert requests.get(env[key] + "/api/v1.0/health", timeout=10).status_code == 204
        ref = env["DESIGN_REF"]
        assert ref.startswith(f"deckhand+{env['SHIPYARD_URL']}/api/v1.0/revisions/")
        assert f"DESIGN_REF={ref}" in (tmp_path / "env").read_text()
        rendered = requests.get(ref.removeprefix("deckhand+"), timeout=10,
                                headers={"X-Auth-Token": env["BERTH_TOKEN"]})
        assert "drydock/BaremetalNode/v1" in rendered.text
        procs = list(runner.procs.values())
    finally:
        runner.stop()
    assert all(p.poll() is not None for p in procs)
