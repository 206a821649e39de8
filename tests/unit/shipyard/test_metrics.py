"""Shipyard's /metrics: actions and steps by state from the store, step durations."""

from __future__ import annotations

from pathlib import Path

import falcon.testing

from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.catalog import definitions
from shipyard_api.metrics import ShipyardMetrics
from shipyard_api.workflow.engine import Engine
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness, InlineExecutor


def _value(metrics: ShipyardMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_actions_by_state_and_step_durations_move_as_the_engine_runs(harness: Harness) -> None:
    metrics = ShipyardMetrics()
    metrics.watch(harness.store)
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert _value(metrics, "berth_shipyard_actions", state="pending") == 1
    assert _value(metrics, "berth_shipyard_steps", state="pending") > 1
    engine = Engine(harness.store, definitions(), harness.services, owner="w1",
                    clock=harness.clock, sleep=harness.clock.sleep,
                    executor=lambda n: InlineExecutor(), observe=metrics.observe_step)
    view = harness.drive(action["id"], engine)
    assert view["state"] == "complete"
    assert _value(metrics, "berth_shipyard_actions", state="pending") == 0
    assert _value(metrics, "berth_shipyard_actions", state="complete") == 1
    assert _value(metrics, "berth_shipyard_steps", state="pending") == 0
    assert _value(metrics, "berth_shipyard_step_seconds_count", step="preflight",
                  state="success") == 1


def test_failed_step_is_counted_under_failed(harness: Harness) -> None:
    metrics = ShipyardMetrics()
    harness.drydock.health = False
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    engine = Engine(harness.store, definitions(), harness.services, owner="w1",
                    clock=harness.clock, sleep=harness.clock.sleep,
                    executor=lambda n: InlineExecutor(), observe=metrics.observe_step)
    assert harness.drive(action["id"], engine)["state"] == "failed"
    assert _value(metrics, "berth_shipyard_step_seconds_count", step="preflight",
                  state="failed") == 1
    assert _value(metrics, "berth_shipyard_step_seconds_sum", step="preflight",
                  state="failed") > 0  # retries with backoff took fake-clock time


def test_metrics_endpoint_is_open_and_serves_the_service_metrics(
        harness: Harness, tmp_path: Path) -> None:
    write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    metrics = ShipyardMetrics()
    metrics.watch(harness.store)
    harness.commit(tag="site-action-success")
    harness.create("redeploy_server", {"target_nodes": "node01"})
    client = falcon.testing.TestClient(create_app(conf, harness.deps(metrics=metrics)))
    client.simulate_get("/api/v1.0/actions")  # refused (no token), still counted
    resp = client.simulate_get("/metrics")
    assert resp.status_code == 200
    assert 'berth_shipyard_actions{state="pending"} 1.0' in resp.text
    assert 'route="/api/v1.0/actions"' in resp.text and 'code="401"' in resp.text
