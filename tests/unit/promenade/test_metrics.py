"""Promenade's /metrics: drain and other operation durations, etcd call durations."""

from __future__ import annotations

from pathlib import Path

import falcon.testing
import pytest

from common.designref import DesignResolver, RefPolicy
from promenade_api import config
from promenade_api.app import Deps, create_app
from promenade_api.etcd.design import load_clusters
from promenade_api.etcd.fake import FakeEtcd
from promenade_api.kube.fake import FakeKube
from promenade_api.kube.model import EvictResult
from promenade_api.metrics import PromenadeMetrics
from promenade_api.service import Promenade
from tests.support.services import write_tokens

from .conftest import FAST, FakeClock, etcd_doc, kubernetes_cluster

P = "/api/v1.0"
Client = tuple[falcon.testing.TestClient, dict[str, str]]


def resolver(root: Path) -> DesignResolver:
    return DesignResolver(RefPolicy(file_root=str(root)), cache_size=0)


@pytest.fixture
def metrics() -> PromenadeMetrics:
    return PromenadeMetrics()


@pytest.fixture
def client(tmp_path: Path, kube: FakeKube, etcd: FakeEtcd, clock: FakeClock,
           metrics: PromenadeMetrics) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    svc = Promenade(kube, metrics.timed_etcd(etcd), resolver(tmp_path), FAST,
                    clock=clock, wall=clock, sleep=clock.sleep, observe=metrics.operation)
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    app = create_app(config.load(str(conf_path)), Deps(promenade=svc, metrics=metrics))
    return falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}


def _value(metrics: PromenadeMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_drain_duration_is_recorded_with_its_outcome(client: Client, kube: FakeKube,
                                                     metrics: PromenadeMetrics) -> None:
    http, h = client
    kube.add_pod("db", "node04")
    kube.evict_script["db"] = [EvictResult("retry", "disruption budget")] * 100
    failed = http.simulate_post(f"{P}/nodes/node04/drain", headers=h,
                                query_string="timeout=20&grace-period=1")
    assert failed.status_code == 500
    assert _value(metrics, "berth_promenade_operation_seconds_count", operation="drain",
                  outcome="error") == 1
    assert _value(metrics, "berth_promenade_operation_seconds_sum", operation="drain",
                  outcome="error") >= 20  # the fake clock ran the drain to its timeout
    kube.evict_script["db"] = []
    assert http.simulate_post(f"{P}/nodes/node04/drain", headers=h).status_code == 200
    assert _value(metrics, "berth_promenade_operation_seconds_count", operation="drain",
                  outcome="ok") == 1


def test_etcd_calls_and_remove_etcd_are_timed(kube: FakeKube, etcd: FakeEtcd,
                                              clock: FakeClock,
                                              metrics: PromenadeMetrics) -> None:
    svc = Promenade(kube, metrics.timed_etcd(etcd), resolver(Path("/nonexistent")), FAST,
                    clock=clock, wall=clock, sleep=clock.sleep, observe=metrics.operation)
    svc.remove_etcd("node01", load_clusters([etcd_doc([kubernetes_cluster()])]), 60)
    assert etcd.removed
    assert _value(metrics, "berth_promenade_etcd_call_seconds_count", operation="remove_member",
                  outcome="ok") == 1
    assert _value(metrics, "berth_promenade_etcd_call_seconds_count", operation="members",
                  outcome="ok") >= 1
    assert _value(metrics, "berth_promenade_operation_seconds_count", operation="remove_etcd",
                  outcome="ok") == 1


def test_metrics_endpoint_is_open_without_a_token(client: Client) -> None:
    http, _ = client
    assert http.simulate_get(f"{P}/nodes/node04").status_code == 401
    resp = http.simulate_get("/metrics")
    assert resp.status_code == 200
    assert "berth_promenade_operation_seconds" in resp.text
    assert 'code="401"' in resp.text
