"""Fixtures for Promenade unit tests: fake Kubernetes, fake etcd, a fake clock, the app."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import falcon.testing
import pytest
import yaml
from sqlalchemy import Engine

from common.designref import DesignResolver, RefPolicy
from promenade_api import config, db
from promenade_api.app import Deps, create_app
from promenade_api.etcd.fake import FakeEtcd
from promenade_api.kube.drain import DrainSettings
from promenade_api.kube.fake import FakeKube
from promenade_api.service import Promenade, Settings
from tests.support.services import write_tokens


class FakeClock:
    """Monotonic and wall time that only move when someone sleeps; timed callbacks fire then."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []
        self._at: list[tuple[float, Callable[[], None]]] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def at(self, when: float, action: Callable[[], None]) -> None:
        """Run `action` once the clock reaches `now + when`."""
        self._at.append((self.now + when, action))

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.now += max(seconds, 0.001)
            due = [a for a in self._at if a[0] <= self.now]
            self._at = [a for a in self._at if a[0] > self.now]
        for _, action in due:
            action()


FAST = Settings(drain=DrainSettings(retry_delay=5.0, lock_poll_interval=5.0,
                                    daemonset_like_kinds=("ConfiguredDaemonSet",)),
                drain_timeout=3600, drain_grace_period=1800, etcd_poll=1.0, lease_poll=1.0,
                kubelet_timeout=60, kubelet_poll=1.0, clear_labels_timeout=60,
                clear_labels_poll=1.0)


def etcd_doc(clusters: list[dict]) -> dict:
    return {"schema": "promenade/EtcdClusters/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": "etcd-clusters",
                         "layeringDefinition": {"abstract": False, "layer": "site"},
                         "storagePolicy": "cleartext"},
            "data": {"clusters": clusters}}


def kubernetes_cluster(threshold: int = 2, members: tuple[str, ...] = ("node01", "node02",
                                                                       "node03")) -> dict:
    return {"name": "kubernetes", "client_endpoints": ["http://127.0.0.1:2379"],
            "members": [{"name": m, "node": m} for m in members],
            "thresholds": {"minimum_healthy_members": threshold}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kube() -> FakeKube:
    k = FakeKube()
    for name in ("node01", "node02", "node03"):
        k.add_node(name, {"kubernetes-etcd": "enabled", "kubernetes.io/hostname": name,
                          "node-role.kubernetes.io/control-plane": ""})
    k.add_node("node04", {"openstack-compute-node": "enabled",
                          "kubernetes.io/hostname": "node04"})
    return k


@pytest.fixture
def etcd() -> FakeEtcd:
    e = FakeEtcd()
    e.add_cluster("kubernetes", ["node01", "node02", "node03"], leader="node02")
    return e


@pytest.fixture
def svc(kube: FakeKube, etcd: FakeEtcd, clock: FakeClock, tmp_path: Path) -> Promenade:
    resolver = DesignResolver(RefPolicy(file_root=str(tmp_path)), cache_size=0)
    return Promenade(kube, etcd, resolver, FAST, clock=clock, wall=clock, sleep=clock.sleep)


@pytest.fixture
def design(tmp_path: Path) -> Callable[..., str]:
    """Write documents to a file and return its file:// href."""

    def write(*docs: dict, name: str = "design.yaml") -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump_all(docs))
        return f"file://{path}"

    return write


@pytest.fixture
def api(tmp_path: Path, svc: Promenade) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    conf = config.load(str(conf_path))
    app = create_app(conf, Deps(promenade=svc, health_checks=[]))
    return falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}


class StoreClock:
    """The wall clock the decommission runs' store counts leases in (set by the test)."""

    def __init__(self) -> None:
        self.now = 5_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A migrated Promenade database on SQLite and on PostgreSQL."""
    url = (f"sqlite:///{tmp_path}/promenade.db" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    db.upgrade(url)
    engine = db.make_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def store_clock() -> StoreClock:
    return StoreClock()
