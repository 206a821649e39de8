"""Promenade's metrics: node operation (drain, ...) and etcd call durations by outcome, and
the decommission phase attempts found stuck."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from common.metrics import BUCKETS, observer, timer
from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth, Progress
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
        self.steps_stuck = Counter(
            "berth_promenade_steps_stuck",
            "Decommission phase attempts found running past their attempt timeout (StepStuck)",
            ["step"], registry=self.registry)

    def count_stuck(self, step: str) -> None:
        self.steps_stuck.labels(step).inc()

    def timed_etcd(self, etcd: EtcdPort) -> EtcdPort:
        """`etcd` with every call timed into `etcd_seconds`."""
        return TimedEtcd(etcd, self.etcd_seconds)


class TimedEtcd:
    """An EtcdPort timing each call of `inner`: (operation, ok|error) seconds."""

    def __init__(self, inner: EtcdPort, seconds: Histogram) -> None:
        self._inner, self._seconds = inner, seconds

    def members(self, cluster: ClusterSpec) -> list[Member]:
        with timer(self._seconds, "members"):
            return self._inner.members(cluster)

    def health(self, cluster: ClusterSpec, member: Member) -> MemberHealth:
        with timer(self._seconds, "health"):
            return self._inner.health(cluster, member)

    def move_leader(self, cluster: ClusterSpec, leader: Member, target: Member) -> None:
        with timer(self._seconds, "move_leader"):
            self._inner.move_leader(cluster, leader, target)

    def remove_member(self, cluster: ClusterSpec, member: Member) -> None:
        with timer(self._seconds, "remove_member"):
            self._inner.remove_member(cluster, member)

    def progress(self, cluster: ClusterSpec, member: Member) -> Progress:
        with timer(self._seconds, "progress"):
            return self._inner.progress(cluster, member)

    def add_learner(self, cluster: ClusterSpec, peer_url: str) -> Member:
        with timer(self._seconds, "add_learner"):
            return self._inner.add_learner(cluster, peer_url)

    def promote(self, cluster: ClusterSpec, member: Member) -> None:
        with timer(self._seconds, "promote"):
            self._inner.promote(cluster, member)
