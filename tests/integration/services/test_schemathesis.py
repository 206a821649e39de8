"""Generated requests against each running service: no 5xx, every response as documented, every
error a status body (schemathesis, bounded and seeded)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.services import service_sections
from tests.fixtures.site import start_test_site, stop_site
from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens
from tests.support.st_hooks import DESIGN_REF_ENV

SERVICES = ("promenade", "drydock", "shipyard")
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,error_is_status_body")
ROOT = Path(__file__).resolve().parents[3]
SEED = "20261121"
MAX_EXAMPLES = "15"
# Stateful runs follow the API links (a created task or action, then its reads and controls);
# not on Promenade, whose inferred links would drain and decommission the site's real nodes
# with hour-long synchronous calls.
PHASES = {"promenade": "examples,coverage,fuzzing",
          "drydock": "examples,coverage,fuzzing,stateful",
          "shipyard": "examples,coverage,fuzzing,stateful"}


def seed_data(site: Site, urls: dict[str, str], token: str) -> dict[str, list[str]]:
    """A committed design in Shipyard and a Drydock task, so generated requests also reach
    existing resources (their ids are offered to schemathesis half of the time)."""
    headers = {"X-Auth-Token": token}
    staged = requests.post(f"{urls['shipyard']}/api/v1.0/configdocs/site",
                           data=site.design_yaml(), timeout=60,
                           headers={**headers, "Content-Type": "application/x-yaml"})
    assert staged.status_code == 201, staged.text
    committed = requests.post(f"{urls['shipyard']}/api/v1.0/commitconfigdocs", headers=headers,
                              timeout=120)
    assert committed.status_code == 200, committed.text
    ref = f"deckhand+{urls['shipyard']}/api/v1.0/revisions/1/rendered-documents"
    task = requests.post(f"{urls['drydock']}/api/v1.0/tasks", headers=headers, timeout=60,
                         json={"action": "validate_design", "design_ref": ref})
    assert task.status_code == 201, task.text
    nodes = [d["metadata"]["name"] for d in site.design_documents()
             if d["schema"] == "drydock/BaremetalNode/v1"]
    return {"tasks": [task.json()["task_id"]], "collections": ["site"], "nodes": nodes[:2],
            "design_ref": [ref]}


def config_file(path: Path, known: dict[str, list[str]]) -> Path:
    lines = []
    for name, values in known.items():
        if name == "design_ref":
            continue
        quoted = ", ".join(f'"{v}"' for v in values)
        lines += [f"[dictionaries.{name}]", f"values = [{quoted}]", ""]
    lines += ["[parameters]",
              '"path.task_id" = { dictionary = "tasks", probability = 0.5 }',
              '"path.collection" = { dictionary = "collections", probability = 0.5 }', "",
              # Promenade's read-only node view on real nodes (its verbs would drain them)
              "[[operations]]", 'include-path = "/api/v1.0/nodes/{node_id}"',
              'include-method = "GET"',
              'parameters = { "path.node_id" = { dictionary = "nodes", probability = 0.5 } }']
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[dict[str, str], str, Path, str]]:
    """A demo site of its own and the three services on it (generated requests may act)."""
    work = tmp_path_factory.mktemp("schemathesis")
    tokens = write_tokens(work / "tokens.yaml")
    site = start_test_site()
    ports = {s: free_port() for s in SERVICES}
    procs: list[ServiceProcess] = []
    try:
        sections = service_sections(site, work, tokens["admin"], ports)
        sections["shipyard"]["workflow"]["api_workers"] = 1
        for svc in SERVICES:
            procs.append(ServiceProcess(svc, work, sections[svc], port=ports[svc]))
        urls = {p.service: p.url for p in procs}
        known = seed_data(site, urls, tokens["admin"])
        yield urls, tokens["admin"], config_file(work / "schemathesis.toml", known), \
            known["design_ref"][0]
    finally:
        for proc in procs:
            proc.stop()
        stop_site(site)


@pytest.mark.slow
@pytest.mark.parametrize("service", SERVICES)
def test_generated_requests_are_answered_as_documented(stack, service, tmp_path):
    urls, token, config, design_ref = stack
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.st_hooks",
           "PYTHONPATH": str(ROOT), DESIGN_REF_ENV: design_ref}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(config), "run",
         f"{urls[service]}/api/v1.0/openapi.json", "-H", f"X-Auth-Token: {token}",
         "--checks", CHECKS, "--max-examples", MAX_EXAMPLES, "--seed", SEED,
         "--phases", PHASES[service], "--workers", "1",
         "--request-timeout", "60", "--no-color"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    (tmp_path / "schemathesis.out").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert "generated" in result.stdout, result.stdout[-5000:]
