"""Promenade's metrics: node operation (drain, ...) and etcd call durations by outcome."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from common.metrics import BUCKETS, TimedCalls, observer
from promenade_api.etcd.port import EtcdPort


class PromenadeMetrics:
    """Created with the app's registry; the service reports its operations to `operation`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.operation_seconds = Histogram(
            "berth_promenade_operation_seconds",
            "Node operations (drain, clear_labels, remove_etcd, ...) by operation and outcome",
            ["operation", "outcome"], registry=self.registry, buckets=BUCKETS)
        self.etcd_seconds = Histogram(
            "berth_promenade_etcd_call_seconds",
            "etcd calls (members, health, move_leader, remove_member) by operation and outcome",
            ["operation", "outcome"], registry=self.registry, buckets=BUCKETS)
        self.operation = observer(self.operation_seconds)

    def timed_etcd(self, etcd: EtcdPort) -> EtcdPort:
        proxy: EtcdPort = TimedCalls(etcd, observer(self.etcd_seconds))  # type: ignore[assignment]
        return proxy
