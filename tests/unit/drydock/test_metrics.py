"""Drydock's /metrics: tasks by status from the store, MAAS and BMC calls by outcome."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from common.context import RequestContext
from drydock_api.app import Deps, create_app
from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.oob_fake import FakeOob
from drydock_api.drivers.ports import OobRouter
from drydock_api.drivers.promenade import FakeLabeller
from drydock_api.metrics import DrydockMetrics
from drydock_api.runtime import Runtime, build_runtime
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import make_conf


@pytest.fixture
def wired(tmp_path: Path) -> Iterator[tuple[Runtime, DrydockMetrics, FakeMaas, str]]:
    metrics = DrydockMetrics()
    maas = FakeMaas(["n1", "n2"])
    oob = OobRouter({"redfish": metrics.timed_oob("redfish", FakeOob())})
    href = designs.write(tmp_path / "site.yaml", designs.simple_site(["n1", "n2"]))
    runtime = build_runtime(make_conf(tmp_path), maas=maas, oob=oob, labeller=FakeLabeller(),
                            metrics=metrics)
    try:
        yield runtime, metrics, maas, href
    finally:
        runtime.stop()
        runtime.pool.shutdown(wait=False, cancel_futures=True)
        runtime.store.engine.dispose()


def _value(metrics: DrydockMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def _destroy(runtime: Runtime, href: str) -> str:
    body, _ = runtime.service.create({"action": "destroy_nodes", "design_ref": href,
                                      "node_filter": None, "options": {"all_nodes": True}},
                                     RequestContext(user="admin"), None)
    return str(body["task_id"])


def test_tasks_by_status_and_driver_calls_move_when_a_task_runs(wired: Any) -> None:
    runtime, metrics, _, href = wired
    _destroy(runtime, href)
    assert _value(metrics, "berth_drydock_tasks", action="destroy_nodes", status="queued",
                  result="incomplete") == 1
    worker = runtime.new_worker("w1")
    assert worker.poll_once() == 1
    worker.join(30)
    assert _value(metrics, "berth_drydock_tasks", action="destroy_nodes", status="queued",
                  result="incomplete") == 0
    assert _value(metrics, "berth_drydock_tasks", action="destroy_nodes", status="complete",
                  result="success") == 1
    assert _value(metrics, "berth_drydock_driver_call_seconds_count", driver="redfish",
                  operation="power_off", outcome="ok") >= 2  # one per node
    assert _value(metrics, "berth_drydock_driver_call_seconds_count", driver="maas",
                  operation="release", outcome="ok") == 2


def test_a_failing_driver_call_is_counted_as_error(wired: Any) -> None:
    _, metrics, maas, _ = wired

    class Broken:
        def power_on(self, bmc: Any) -> None:
            raise RuntimeError("BMC gone")

    proxy = metrics.timed_oob("ipmi", Broken())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        proxy.power_on(None)
    assert _value(metrics, "berth_drydock_driver_call_seconds_count", driver="ipmi",
                  operation="power_on", outcome="error") == 1


def test_metrics_endpoint_is_open_and_serves_the_task_counts(
        wired: Any, tmp_path: Path) -> None:
    runtime, metrics, _, href = wired
    _destroy(runtime, href)
    client = falcon.testing.TestClient(create_app(make_conf(tmp_path),
                                                  Deps(runtime=runtime, metrics=metrics)))
    resp = client.simulate_get("/metrics")
    assert resp.status_code == 200
    assert ('berth_drydock_tasks{action="destroy_nodes",result="incomplete",status="queued"} 1.0'
            in resp.text)
