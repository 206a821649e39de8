"""The `shipyard` CLI against a Shipyard API served over HTTP (CliRunner)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from click.testing import CliRunner

from shipyard_api import config
from shipyard_api.actions.statuses import SiteStatuses
from shipyard_api.app import create_app
from shipyard_api.catalog import definitions
from shipyard_api.cli.main import cli
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.worker import WorkerPool
from tests.support.procs import free_port
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

MARKER = "11111111-2222-4333-8444-555555555555"


class Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(harness: Harness, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    statuses = SiteStatuses(harness.drydock, harness.docs, "http://shipyard")
    app = create_app(config.load(str(tmp_path / "shipyard.conf")),
                     harness.deps(site_statuses=statuses))
    port = free_port()
    server = make_server("127.0.0.1", port, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", tokens
    finally:
        server.shutdown()
        server.server_close()


def run(served: tuple[str, dict[str, str]], *args: str, token: str = "admin") -> Any:
    url, tokens = served
    return CliRunner().invoke(cli, list(args), env={"SHIPYARD_URL": url,
                                                    "SHIPYARD_TOKEN": tokens[token]})


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and "shipyard, version" in result.output


def test_create_get_describe_and_control_an_action(served: Any, harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    created = run(served, "-o", "json", "--context-marker", MARKER, "create", "action",
                  "redeploy_server", "--param", "target_nodes=node01",
                  "--param", "preserve-local-storage=true")
    assert created.exit_code == 0, created.output
    action = json.loads(created.output)
    assert action["context_marker"] == MARKER
    assert action["parameters"]["preserve-local-storage"] is True
    listed = run(served, "get", "actions", token="reader")
    assert listed.exit_code == 0 and action["id"] in listed.output
    described = run(served, "describe", f"action/{action['id']}", token="reader")
    assert described.exit_code == 0 and "decommission.node01" in described.output
    step = run(served, "-o", "json", "describe", f"step/{action['id']}/preflight")
    assert json.loads(step.output)["id"] == "preflight"
    paused = run(served, "-o", "json", "pause", f"action/{action['id']}")
    assert paused.exit_code == 0 and json.loads(paused.output)["state"] == "paused"
    assert json.loads(run(served, "-o", "json", "unpause", action["id"]).output)["state"] \
        == "running"
    stopped = run(served, "-o", "yaml", "stop", f"action/{action['id']}")
    assert stopped.exit_code == 0 and "state: stopping" in stopped.output


def test_api_errors_print_the_status_and_exit_1(served: Any, harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    result = run(served, "create", "action", "redeploy_server", "--param",
                 "target_nodes=ghost")
    assert result.exit_code == 1
    assert "Error 400 ValidationFailure" in result.output and "ghost" in result.output
    denied = run(served, "create", "action", "redeploy_server", "--param",
                 "target_nodes=node01", token="reader")
    assert denied.exit_code == 1 and "Error 403" in denied.output


def test_bad_arguments_are_usage_errors(served: Any) -> None:
    assert run(served, "--context-marker", "nope", "get", "actions").exit_code == 2
    assert run(served, "create", "action", "deploy_site", "--param", "novalue").exit_code == 2


def test_allow_intermediate_commits_flag_is_sent(served: Any, harness: Harness) -> None:
    harness.commit()
    harness.commit()
    refused = run(served, "create", "action", "update_site")
    assert refused.exit_code == 1 and "IntermediateCommits" in refused.output
    allowed = run(served, "-o", "json", "create", "action", "update_site",
                  "--allow-intermediate-commits")
    assert allowed.exit_code == 0
    assert json.loads(allowed.output)["parameters"]["allow-intermediate-commits"] is True


def _workers(harness: Harness) -> WorkerPool:
    settings = EngineSettings(lease_seconds=5, hold_seconds=1, max_poll_interval=0.02)

    def make(n: int) -> Engine:
        return Engine(harness.store, definitions(), harness.services, owner=f"cli-{n}",
                      settings=settings, clock=time.time)

    return WorkerPool(make, 1, 0.02)


def test_wait_follows_the_action_and_exits_by_its_outcome(served: Any, harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    workers = _workers(harness)
    workers.start()
    try:
        done = run(served, "create", "action", "redeploy_server", "--param",
                   "target_nodes=node01", "--wait", "--poll", "0.05", "--timeout", "60")
        assert done.exit_code == 0, done.output
        assert "Complete" in done.output
        harness.drydock.fail = {("deploy_nodes", "node02")}
        failed = run(served, "-o", "json", "create", "action", "redeploy_server", "--param",
                     "target_nodes=node02", "--wait", "--poll", "0.05", "--timeout", "60")
        assert failed.exit_code == 1
        assert "DrydockTaskFailed" in failed.output
    finally:
        workers.stop()


def test_get_site_statuses_prints_both_tables(served: Any, harness: Harness) -> None:
    harness.drydock.node_list = [{"hostname": "node01", "maas_status": "Deployed",
                                  "power_state": "on"}]
    result = run(served, "get", "site-statuses", token="reader")
    assert result.exit_code == 0
    assert "nodes-provision-status" in result.output and "Deployed" in result.output
    assert "machines-power-state" in result.output
    only = run(served, "-o", "json", "get", "site-statuses", "--filter",
               "machines-power-state")
    power = [{"hostname": "node01", "power_state": "on", "error": None}]
    assert json.loads(only.output) == {"machines-power-state": power,
                                       "machines_powerstate": power}
