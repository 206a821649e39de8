"""Every route of every service, with each path parameter, the usual numeric query parameters
and the design reference's revision id given as a 1,000-digit number, answers a 4xx status
body: never a 500 (an integer too large for the database) nor a 502 (a peer's refusal
passed on as the gateway's fault)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import requests

from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens

SERVICES = ("promenade", "drydock", "shipyard")
BIG = "1" * 1000
NOT_CHECKED = {"/api/v1.0/health/extended"}  # reports peers and MAAS, absent here


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[
        dict[str, ServiceProcess], dict[str, str], dict[str, str]]]:
    work = tmp_path_factory.mktemp("huge-ids")
    tokens = write_tokens(work / "tokens.yaml")
    ports = {s: free_port() for s in SERVICES}
    peers = {f"{s}_url": f"http://127.0.0.1:{p}" for s, p in ports.items()}
    procs: dict[str, ServiceProcess] = {}
    try:
        for svc in SERVICES:
            procs[svc] = ServiceProcess(svc, work, {
                "auth": {"strategy": "token", "token_file": work / "tokens.yaml",
                         "service_token": tokens["admin"]},
                "database": {"connection": f"sqlite:///{work}/{svc}.db"},
                "peers": {**peers, "retries": 0}, "logging": {"json": "false"}},
                port=ports[svc])
        yield procs, peers, tokens
    finally:
        for proc in procs.values():
            proc.stop()


def is_status(resp: requests.Response) -> bool:
    """A status body, or the web view's own HTML page for its routes."""
    if resp.headers.get("Content-Type", "").startswith("text/html"):
        return resp.request.path_url.startswith("/ui")
    try:
        return bool(resp.json().get("kind") == "Status")
    except ValueError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("svc", SERVICES)
def test_a_thousand_digit_id_anywhere_is_a_4xx(running: tuple[
        dict[str, ServiceProcess], dict[str, str], dict[str, str]], svc: str) -> None:
    procs, peers, tokens = running
    headers = {"X-Auth-Token": tokens["admin"]}
    ref = f"deckhand+{peers['shipyard_url']}/api/v1.0/revisions/{BIG}/rendered-documents"
    body = {"rel": "design", "href": ref, "design_ref": ref, "node_filter": None,
            "action": "destroy_nodes"}
    query = {"limit": BIG, "layers": BIG, "since": BIG, "wait": BIG, "version": BIG,
             "timeout": BIG, "design_ref": ref}
    doc = requests.get(f"{procs[svc].url}/api/v1.0/openapi.json", timeout=30).json()
    bad = []
    for path, ops in doc["paths"].items():
        if path in NOT_CHECKED:
            continue
        for method in (m for m in ops if m in ("get", "post", "put", "delete")):
            for params in ({}, query):
                resp = requests.request(method.upper(), procs[svc].url + re.sub(
                    r"\{[^}]+\}", BIG, path), headers=headers, params=params, timeout=60,
                    json=body if method in ("post", "put") else None)
                if resp.status_code >= 500 or (resp.status_code >= 400 and
                                               not is_status(resp)):
                    bad.append((method, path, bool(params), resp.status_code, resp.text[:300]))
    assert bad == []
