"""Fixtures: a fast simulated cluster served on a free port, and official-client APIs for it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator

import kubernetes
import pytest

from sitesim.kubeapi import KubeCluster, KubeTimings, seed_workloads, serve
from sitesim.kubeapi.server import KubeServer

CONTROL = ["node01", "node02", "node03"]
COMPUTE = ["node04", "node05", "node06"]


class RecordingHooks:
    """Site hooks that count calls and hand out injected faults."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str, str | None]] = Counter()
        self.faults: dict[tuple[str, str], str] = {}

    def record_call(self, system: str, op: str, node: str | None) -> None:
        self.calls[(system, op, node)] += 1

    def record_operation(self, system: str, op: str, node: str | None, seconds: float) -> None:
        return None

    def fault(self, operation: str, node: str):  # type: ignore[no-untyped-def]
        return self.faults.get((operation, node))


def fast_timings() -> KubeTimings:
    return KubeTimings(pod_termination_delay=0.05, recreate_delay=0.1,
                       kubelet_shutdown_delay=0.05, not_ready_delay=0.05,
                       controller_interval=0.05)


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    """Poll until `predicate()` is truthy (the timeout only guards against hangs)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


@pytest.fixture
def hooks() -> RecordingHooks:
    return RecordingHooks()


@pytest.fixture
def cluster(hooks: RecordingHooks) -> Iterator[KubeCluster]:
    """Six Ready nodes (three control, three compute), controllers running, no workloads."""
    c = KubeCluster(hooks, fast_timings())
    for name in CONTROL:
        c.add_node(name, {"kubernetes-etcd": "enabled"}, control_plane=True)
    for name in COMPUTE:
        c.add_node(name, {"openstack-compute-node": "enabled"})
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def seeded(cluster: KubeCluster) -> KubeCluster:
    """The cluster with the demo workloads, settled."""
    seed_workloads(cluster, CONTROL, COMPUTE)
    core = cluster.api

    def settled() -> bool:
        from sitesim.kubeapi.api import ListQuery
        from sitesim.kubeapi.resources import BY_GROUP_PLURAL
        items = core.list(BY_GROUP_PLURAL[("", "pods")], None, ListQuery())["items"]
        return len(items) >= 17 and all(p["status"]["phase"] == "Running" for p in items)
    wait_for(settled)
    return cluster


@pytest.fixture
def server(cluster: KubeCluster) -> Iterator[KubeServer]:
    s = serve(cluster)
    try:
        yield s
    finally:
        s.shutdown()


@pytest.fixture
def api_client(server: KubeServer) -> Iterator[kubernetes.client.ApiClient]:
    config = kubernetes.client.Configuration()
    config.host = server.url
    client = kubernetes.client.ApiClient(config)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def core(api_client: kubernetes.client.ApiClient) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


@pytest.fixture
def policy(api_client: kubernetes.client.ApiClient) -> kubernetes.client.PolicyV1Api:
    return kubernetes.client.PolicyV1Api(api_client)


@pytest.fixture
def apps(api_client: kubernetes.client.ApiClient) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(api_client)


@pytest.fixture
def coordination(api_client: kubernetes.client.ApiClient) -> kubernetes.client.CoordinationV1Api:
    return kubernetes.client.CoordinationV1Api(api_client)
