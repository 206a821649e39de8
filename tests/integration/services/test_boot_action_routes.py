"""Promenade's join scripts and Drydock's boot action API under gunicorn: codes, content
types, and Drydock fetching a join script from Promenade as a promenade+http asset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from common.httpclient import ServiceClient
from drydock_api.bootactions.fetch import LocationFetcher
from drydock_api.bootactions.render import AssetError
from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens

P = "/api/v1.0"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("bootactions")
    tokens = write_tokens(work / "tokens.yaml")
    design = work / "design.yaml"
    design.write_text(yaml.safe_dump_all([
        {"schema": "drydock/BaremetalNode/v1", "metadata": {"name": "node05"}, "data": {}}]))
    ports = {s: free_port() for s in ("promenade", "drydock")}
    peers = {f"{s}_url": f"http://127.0.0.1:{p}" for s, p in ports.items()}
    peers["shipyard_url"] = "http://127.0.0.1:9"
    procs: dict[str, ServiceProcess] = {}
    try:
        for svc in ("promenade", "drydock"):
            procs[svc] = ServiceProcess(svc, work, {
                "auth": {"strategy": "token", "token_file": work / "tokens.yaml",
                         "service_token": tokens["admin"]},
                "database": {"connection": f"sqlite:///{work}/{svc}.db"},
                "design": {"file_root": work}, "peers": peers,
            }, port=ports[svc])
        yield procs, tokens, f"file://{design}"
    finally:
        for proc in procs.values():
            proc.stop()


def test_join_script_is_served_as_a_shell_script(running):
    procs, tokens, href = running
    resp = requests.get(f"{procs['promenade'].url}{P}/join-scripts", timeout=30, params={
        "design_ref": href, "hostname": "node05", "ip": "10.0.0.15",
        "labels.dynamic": ["openstack-compute-node=enabled", "rack=rack02"]},
        headers={"X-Auth-Token": tokens["admin"]})
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"] == "text/x-shellscript"
    assert "join_label dynamic rack=rack02" in resp.text


def test_join_script_400_lists_every_bad_parameter_and_403_without_the_rule(running):
    procs, tokens, href = running
    url = f"{procs['promenade'].url}{P}/join-scripts"
    bad = requests.get(url, timeout=30, headers={"X-Auth-Token": tokens["admin"]},
                       params={"hostname": "node05", "ip": "x", "static.labels": "novalue"})
    assert bad.status_code == 400
    texts = [m["message"] for m in bad.json()["details"]["messageList"]]
    assert len(texts) == 3 and any("design_ref" in t for t in texts)
    denied = requests.get(url, timeout=30, headers={"X-Auth-Token": tokens["reader"]},
                          params={"design_ref": href, "hostname": "node05", "ip": "10.0.0.5"})
    assert denied.status_code == 403


def test_drydock_fetches_the_script_from_promenade_or_names_its_refusal(running):
    procs, tokens, href = running
    fetch = LocationFetcher(ServiceClient(procs["promenade"].url, token=tokens["admin"],
                                          retries=0))
    script = fetch(f"promenade+http://promenade-api{P}/join-scripts?design_ref={href}"
                   "&hostname=node05&ip=10.0.0.15").decode()
    assert script.startswith("#!/bin/bash") and "join_register_node node05" in script
    with pytest.raises(AssetError, match="Promenade answered 400.*'ghost' is not a node"):
        fetch(f"promenade+http://promenade-api{P}/join-scripts?design_ref={href}"
              "&hostname=ghost&ip=10.0.0.15")


def test_boot_action_api_answers_the_node_not_a_token(running, tmp_path: Path):
    procs, tokens, _ = running
    url = f"{procs['drydock'].url}{P}/bootactions"
    admin = {"X-Auth-Token": tokens["admin"]}
    assert requests.get(f"{url}/nodes/node05/units", headers=admin,
                        timeout=30).status_code == 404  # no deploy gave it boot actions
    assert requests.post(f"{url}/01J00000000000000000000000", json={"status": "success"},
                         headers={"X-Bootaction-Key": "ab" * 32}, timeout=30).status_code == 404
    bad_name = requests.get(f"{url}/nodes/Node_05/files", timeout=30)
    assert bad_name.status_code == 400
