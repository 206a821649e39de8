"""Each service, started by its console script under gunicorn, answers the common routes."""

import uuid

import pytest
import requests

from common.context import RequestContext
from common.httpclient import ServiceClient
from tests.support.services import ServiceProcess, write_tokens

SERVICES = ("shipyard", "promenade", "drydock")


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    work = tmp_path_factory.mktemp("services")
    tokens = write_tokens(work / "tokens.yaml")
    from tests.support.procs import free_port

    ports = {s: free_port() for s in SERVICES}
    peers = {f"{s}_url": f"http://127.0.0.1:{p}" for s, p in ports.items()}
    procs = {}
    try:
        for svc in ("promenade", "drydock", "shipyard"):
            procs[svc] = ServiceProcess(svc, work, {
                "auth": {"strategy": "token", "token_file": work / "tokens.yaml",
                         "service_token": tokens["admin"]},
                "database": {"connection": f"sqlite:///{work}/{svc}.db"},
                "peers": peers,
            }, port=ports[svc])
        yield procs, tokens
    finally:
        for proc in procs.values():
            proc.stop()


@pytest.mark.parametrize("svc", SERVICES)
def test_service_answers_versions_health_and_openapi(running, svc):
    procs, tokens = running
    url = procs[svc].url
    assert requests.get(f"{url}/versions", timeout=5).json() == {
        "v1.0": {"path": "/api/v1.0", "status": "stable"}}
    assert requests.get(f"{url}/api/v1.0/health", timeout=10).status_code == 204
    doc = requests.get(f"{url}/api/v1.0/openapi.json", timeout=5).json()
    assert doc["openapi"].startswith("3.") and "/api/v1.0/health" in doc["paths"]


@pytest.mark.parametrize("svc", SERVICES)
def test_extended_health_needs_a_token_and_lists_dependencies(running, svc):
    procs, tokens = running
    url = f"{procs[svc].url}/api/v1.0/health/extended"
    denied = requests.get(url, timeout=5)
    assert denied.status_code == 401 and denied.json()["reason"] == "Unauthenticated"
    body = requests.get(url, headers={"X-Auth-Token": tokens["reader"]}, timeout=10).json()
    assert body["kind"] == "Status" and body["code"] in (200, 503)
    assert all(m["kind"] == "HealthMessage" for m in body["details"]["messageList"])


def test_shipyard_extended_health_checks_its_peers(running):
    procs, tokens = running
    body = requests.get(f"{procs['shipyard'].url}/api/v1.0/health/extended",
                        headers={"X-Auth-Token": tokens["admin"]}, timeout=10).json()
    names = {m["name"] for m in body["details"]["messageList"]}
    assert {"promenade", "drydock"} <= names


def test_context_marker_is_forwarded_to_a_real_peer(running):
    procs, tokens = running
    ctx = RequestContext(marker=str(uuid.uuid4()))
    client = ServiceClient(procs["promenade"].url, token=tokens["reader"])
    response = client.raw("GET", "/api/v1.0/health/extended", ctx=ctx)
    assert response.headers["X-Context-Marker"] == ctx.marker
    log = procs["promenade"].proc.output()
    assert ctx.marker in log


def test_a_peer_outage_shows_in_extended_health_but_keeps_shipyard_ready(tmp_path):
    tokens = write_tokens(tmp_path / "tokens.yaml")
    dead = "http://127.0.0.1:9"
    proc = ServiceProcess("shipyard", tmp_path, {
        "auth": {"strategy": "token", "token_file": tmp_path / "tokens.yaml"},
        "database": {"connection": f"sqlite:///{tmp_path}/shipyard.db"},
        "peers": {"promenade_url": dead, "drydock_url": dead, "retries": 0},
        "documents": {"secret_key_file": tmp_path / "docs.key"},
    })
    try:
        assert requests.get(f"{proc.url}/api/v1.0/health", timeout=10).status_code == 204
        body = requests.get(f"{proc.url}/api/v1.0/health/extended",
                            headers={"X-Auth-Token": tokens["reader"]}, timeout=30).json()
        assert body["code"] == 503
        failed = {m["name"] for m in body["details"]["messageList"] if m["error"]}
        assert failed == {"promenade", "drydock"}
    finally:
        proc.stop()
