"""Fixtures: one real control plane per session (kube-apiserver, controllers, scheduler, kwok
as the six nodes' kubelets, the demo workloads), real 3-member etcd clusters, and Promenade
in-process as the ServiceAccount Berth ships (a verb its role lacks fails these tests).

Each test gets a namespace of its own and finds the six nodes as the session began: labels,
annotations, cordon and kubelet are put back, removed nodes and bare demo pods recreated."""

from __future__ import annotations

import dataclasses
import itertools
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
from sitesim.hooks import NullHooks
from sitesim.kube import workloads
from sitesim.kube.controlplane import ControlPlane
from sitesim.kube.sitekube import HostTimings, SiteKube
from tests.support import kube as kube_support
from tests.support.kube import Admin
from tests.support.services import write_tokens

CONTROL = ["node01", "node02", "node03"]
COMPUTE = ["node04", "node05", "node06"]
NODES = CONTROL + COMPUTE
BARE_PODS = {"debug-shell": ("node04", False), "scratch-cache": ("node05", True)}
P = "/api/v1.0"
MERGE = "application/merge-patch+json"

SETTINGS = Settings(
    drain=DrainSettings(retry_delay=0.2, lock_poll_interval=0.1,
                        daemonset_like_kinds=("ConfiguredDaemonSet",), parallelism=8),
    drain_timeout=60, drain_grace_period=5, clear_labels_timeout=20, clear_labels_poll=0.1,
    etcd_poll=0.2, etcd_ready_timeout=30, remove_etcd_timeout=30, lease_duration=30,
    lease_poll=0.1, kubelet_timeout=30, kubelet_poll=0.1)
_NAMESPACES = itertools.count(1)


def wait_for(predicate: Callable[[], Any], timeout: float = 90.0) -> Any:
    """Poll until true; the timeout only guards against hangs."""
    return kube_support.wait_for("condition", predicate, timeout)


def _own_annotation(key: str) -> bool:
    """Annotations the cluster itself keeps on a Node (left alone by the reset)."""
    return "kubernetes.io" in key or "kwok" in key


@dataclass
class Session:
    """The session's cluster: the site's side, the admin, Promenade's client and namespace."""

    site: SiteKube
    admin: Admin
    kube: KubeClient  # as the promenade ServiceAccount
    lease_namespace: str
    snapshot: dict[str, dict[str, Any]]  # each node's metadata as the session began


@dataclass
class KubeSite:
    """What a test sees: the session's cluster and a namespace of its own (`ns`)."""

    session: Session
    ns: str

    @property
    def kube(self) -> KubeClient:
        return self.session.kube

    @property
    def admin(self) -> Admin:
        return self.session.admin

    @property
    def site(self) -> SiteKube:
        return self.session.site

    def pods_on(self, node: str, prefix: str = "", *, live: bool = True) -> list[str]:
        """Names of the pods bound to the node; with `live`, not those being deleted."""
        items = self.admin.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
        return sorted(p["metadata"]["name"] for p in items
                      if p["metadata"]["name"].startswith(prefix)
                      and not (live and p["metadata"].get("deletionTimestamp")))

    def node(self, name: str) -> dict[str, Any]:
        return self.admin.node(name)

    def apply(self, obj: dict[str, Any]) -> None:
        """Create the object in the test's namespace (unless it names another)."""
        obj.setdefault("metadata", {}).setdefault("namespace", self.ns)
        self.site.apply([obj])


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _settled(admin: Admin) -> bool:
    """Six Ready, schedulable nodes; the bare demo pods Running; web fully available."""
    nodes = {n["metadata"]["name"]: n for n in admin.get("/api/v1/nodes")["items"]}
    if not all(name in nodes and _ready(nodes[name])
               and not nodes[name]["spec"].get("unschedulable") for name in NODES):
        return False
    pods = admin.get(f"/api/v1/namespaces/{workloads.DEMO_NAMESPACE}/pods")["items"]
    running = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")
               and (p.get("status") or {}).get("phase") == "Running"}
    if not set(BARE_PODS) <= running:
        return False
    pdb = admin.get(f"/apis/policy/v1/namespaces/{workloads.DEMO_NAMESPACE}"
                    "/poddisruptionbudgets/web")
    status = pdb.get("status") or {}
    return bool(status.get("observedGeneration") == pdb["metadata"]["generation"]
                and status.get("currentHealthy") == 3)


@pytest.fixture(scope="package")
def kube_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """The real control plane with the demo site's six nodes and workloads."""
    for plane in kube_support.control_plane(tmp_path_factory):
        yield from _session(plane, tmp_path_factory.mktemp("promenade-sa"))


def _session(plane: ControlPlane, work: Path) -> Iterator[Session]:
    site = SiteKube(plane, NullHooks(), HostTimings(kubelet_shutdown_delay=0.2,
                                                    poll_interval=0.2))
    for name in CONTROL:
        site.add_node(name, {"kubernetes-etcd": "enabled"}, control_plane=True)
    for name in COMPUTE:
        site.add_node(name, {"openstack-compute-node": "enabled"})
    site.seed_infrastructure()
    site.seed_workloads(CONTROL, COMPUTE)
    site.start()
    try:
        kubeconfig = work / "promenade.kubeconfig"
        lease_namespace = site.promenade_kubeconfig(kubeconfig)
        kube = KubeClient(load_api_client(kubeconfig=str(kubeconfig)), request_timeout=10,
                          poll_interval=0.1)
        admin = Admin(plane)
        wait_for(lambda: _settled(admin), timeout=180)
        snapshot = {name: admin.node(name)["metadata"] for name in NODES}
        yield Session(site, admin, kube, lease_namespace, snapshot)
    finally:
        site.stop()


def _reset_node(session: Session, name: str) -> None:
    """The node's labels and Berth's annotations as at the start, uncordoned, kubelet on."""
    admin, meta = session.admin, session.snapshot[name]
    session.site.set_kubelet_shutdown_enabled(name, True)
    reply = admin.call("GET", f"/api/v1/nodes/{name}")
    if reply.status_code == 404:
        session.site.add_node(name, dict(meta["labels"]), control_plane=name in CONTROL)
        reply = admin.call("GET", f"/api/v1/nodes/{name}")
    reply.raise_for_status()
    node = reply.json()
    labels = {k: None for k in node["metadata"].get("labels") or {} if k not in meta["labels"]}
    annotations = {k: None for k in node["metadata"].get("annotations") or {}
                   if k not in (meta.get("annotations") or {}) and not _own_annotation(k)}
    spec: dict[str, Any] = {"unschedulable": None}
    taints = node["spec"].get("taints") or []
    kept = [t for t in taints if t["key"].startswith("node.kubernetes.io/")]
    if kept != taints:
        spec["taints"] = kept or None
    admin.call("PATCH", f"/api/v1/nodes/{name}", {
        "metadata": {"labels": {**labels, **meta["labels"]}, "annotations": annotations},
        "spec": spec}, content_type=MERGE).raise_for_status()


def _reset_bare_pods(admin: Admin) -> None:
    """Recreate the demo's bare pods that a test drained (once the old one is gone)."""
    ns = workloads.DEMO_NAMESPACE
    for name, (node, empty_dir) in BARE_PODS.items():
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        wait_for(lambda p=path: admin.call("GET", p).status_code == 404
                 or not admin.get(p)["metadata"].get("deletionTimestamp"))
        if admin.call("GET", path).status_code == 404:
            admin.create(f"/api/v1/namespaces/{ns}/pods",
                         workloads.bare_pod(name, node, empty_dir=empty_dir))


@pytest.fixture
def kube_site(kube_session: Session) -> Iterator[KubeSite]:
    """The session's cluster as the test's own: a fresh namespace, and afterwards the nodes and
    demo workloads put back (the namespace deleted, and gone, before the next test)."""
    admin = kube_session.admin
    ns = f"t{next(_NAMESPACES)}"
    admin.create("/api/v1/namespaces", workloads.namespace(ns))
    try:
        yield KubeSite(kube_session, ns)
    finally:
        admin.call("DELETE", f"/api/v1/namespaces/{ns}")
        for name in NODES:
            _reset_node(kube_session, name)
        wait_for(lambda: admin.call("GET", f"/api/v1/namespaces/{ns}").status_code == 404)
        _reset_bare_pods(admin)
        wait_for(lambda: _settled(admin))


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
    """Promenade in-process: the real apiserver as its ServiceAccount, real gRPC to etcd."""
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    resolver = DesignResolver(RefPolicy(file_root=str(tmp_path)), cache_size=0)
    settings = dataclasses.replace(SETTINGS, lease_namespace=kube_site.session.lease_namespace)
    svc = Promenade(kube_site.kube, Etcd3Port(timeout=2.0), resolver, settings)
    app = create_app(config.load(str(conf_path)), Deps(promenade=svc))
    return Api(falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}, svc)
