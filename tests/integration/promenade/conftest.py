"""Fixtures: a simulated Kubernetes API (real HTTP), real 3-member etcd clusters, Promenade."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
import yaml

from common.designref import DesignResolver, RefPolicy
from promenade_api import config
from promenade_api.app import Deps, create_app
from promenade_api.etcd.client import Etcd3Port
from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.kube.drain import DrainSettings
from promenade_api.service import Promenade, Settings
from sitesim.etcd.cluster import EtcdCluster, etcd_available
from sitesim.kubeapi import KubeCluster, KubeTimings, seed_workloads, serve
from sitesim.kubeapi.api import ListQuery
from sitesim.kubeapi.resources import BY_GROUP_PLURAL
from tests.support.services import write_tokens

CONTROL = ["node01", "node02", "node03"]
COMPUTE = ["node04", "node05", "node06"]
PODS = BY_GROUP_PLURAL[("", "pods")]
NODES = BY_GROUP_PLURAL[("", "nodes")]
P = "/api/v1.0"

SETTINGS = Settings(
    drain=DrainSettings(retry_delay=0.2, lock_poll_interval=0.1,
                        daemonset_like_kinds=("ConfiguredDaemonSet",), parallelism=8),
    drain_timeout=60, drain_grace_period=5, clear_labels_timeout=20, clear_labels_poll=0.1,
    etcd_poll=0.2, etcd_ready_timeout=30, remove_etcd_timeout=30, lease_duration=30,
    lease_poll=0.1, kubelet_timeout=20, kubelet_poll=0.1)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0) -> None:
    """Poll until true; the timeout only guards against hangs."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


class CountingHooks:
    """Site hooks that count the simulated API's calls by (op, node) and inject nothing."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str | None]] = Counter()
        self.faults: dict[tuple[str, str], str] = {}

    def record_call(self, system: str, op: str, node: str | None) -> None:
        self.calls[(op, node)] += 1

    def record_operation(self, system: str, op: str, node: str | None, seconds: float) -> None:
        return None

    def fault(self, operation: str, node: str) -> Any:
        return self.faults.get((operation, node))


@dataclass
class KubeSite:
    cluster: KubeCluster
    hooks: CountingHooks
    url: str
    kube: KubeClient

    def pods_on(self, node: str, prefix: str = "", *, live: bool = True) -> list[str]:
        items = self.cluster.api.list(PODS, None, ListQuery(
            field_selector=f"spec.nodeName={node}"))["items"]
        return sorted(p["metadata"]["name"] for p in items
                      if p["metadata"]["name"].startswith(prefix)
                      and not (live and p["metadata"].get("deletionTimestamp")))

    def node(self, name: str) -> dict[str, Any]:
        return self.cluster.store.get(NODES, "", name)


@pytest.fixture
def kube_site() -> Iterator[KubeSite]:
    hooks = CountingHooks()
    cluster = KubeCluster(hooks, KubeTimings(
        pod_termination_delay=0.1, recreate_delay=0.2, kubelet_shutdown_delay=0.1,
        not_ready_delay=0.1, controller_interval=0.05))
    for name in CONTROL:
        cluster.add_node(name, {"kubernetes-etcd": "enabled", "kubernetes.io/hostname": name},
                         control_plane=True)
    for name in COMPUTE:
        cluster.add_node(name, {"openstack-compute-node": "enabled",
                                "kubernetes.io/hostname": name})
    cluster.start()
    seed_workloads(cluster, CONTROL, COMPUTE)
    server = serve(cluster)
    try:
        site = KubeSite(cluster, hooks, server.url, KubeClient(load_api_client(api_url=server.url),
                                                        request_timeout=10, poll_interval=0.1))
        wait_for(lambda: len(site.pods_on("node04", "web-")) == 1)
        yield site
    finally:
        server.shutdown()
        cluster.stop()


@pytest.fixture
def etcd_cluster(tmp_path: Path) -> Iterator[EtcdCluster]:
    if not etcd_available():
        pytest.skip("/usr/bin/etcd is not installed")
    cluster = EtcdCluster("kubernetes", list(CONTROL), tmp_path)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def etcd_design(tmp_path: Path, cluster: EtcdCluster, threshold: int = 2) -> str:
    doc = {"schema": "promenade/EtcdClusters/v1",
           "metadata": {"schema": "metadata/Document/v1", "name": "etcd-clusters",
                        "layeringDefinition": {"abstract": False, "layer": "site"},
                        "storagePolicy": "cleartext"},
           "data": {"clusters": [{
               "name": cluster.name, "client_endpoints": cluster.client_endpoints,
               "members": [{"name": m, "node": m} for m in cluster.members],
               "thresholds": {"minimum_healthy_members": threshold}}]}}
    path = tmp_path / f"design-{threshold}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return f"file://{path}"


@dataclass
class Api:
    client: falcon.testing.TestClient
    headers: dict[str, str]
    svc: Promenade

    def post(self, path: str, **kw: Any) -> falcon.testing.Result:
        return self.client.simulate_post(f"{P}{path}", headers=self.headers, **kw)

    def get(self, path: str, **kw: Any) -> falcon.testing.Result:
        return self.client.simulate_get(f"{P}{path}", headers=self.headers, **kw)


@pytest.fixture
def api(kube_site: KubeSite, tmp_path: Path) -> Api:
    """Promenade in-process over real HTTP to the simulated API and real gRPC to etcd."""
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    resolver = DesignResolver(RefPolicy(file_root=str(tmp_path)), cache_size=0)
    svc = Promenade(kube_site.kube, Etcd3Port(timeout=2.0), resolver, SETTINGS)
    app = create_app(config.load(str(conf_path)), Deps(promenade=svc))
    return Api(falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}, svc)
