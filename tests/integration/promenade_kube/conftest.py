"""Promenade as a real gunicorn process against the site's real control plane (kube-apiserver,
controller-manager, scheduler, kwok), authenticated as the ServiceAccount that
deploy/kubernetes/base ships, with exactly the RBAC rendered from that kustomization: a verb
Promenade uses but the role lacks fails these tests.

Skips when the binaries are not built (`make kube`), unless BERTH_KUBE_REQUIRED=1."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from sitesim.kube.controlplane import ControlPlane
from tests.support import kube as kube_support
from tests.support.kube import Admin
from tests.support.services import ServiceProcess, write_tokens

SERVICE_ACCOUNT = "promenade"
NS = "demo"


@dataclass(frozen=True)
class Identity:
    """Who a promenade-api is: to Berth's clients and to Kubernetes."""

    token: str  # Berth's admin token
    token_file: Path  # Berth's tokens
    sa_token: str  # the ServiceAccount's Kubernetes token
    kubeconfig: Path  # the ServiceAccount's kubeconfig, as Promenade uses it
    lease_namespace: str  # Berth's namespace, where its Role grants Leases


@dataclass
class Promenade:
    """promenade-api under gunicorn, as the `promenade` ServiceAccount."""

    proc: ServiceProcess
    who: Identity

    @property
    def token(self) -> str:
        return self.who.token

    @property
    def sa_token(self) -> str:
        return self.who.sa_token

    @property
    def kubeconfig(self) -> Path:
        return self.who.kubeconfig

    @property
    def lease_namespace(self) -> str:
        return self.who.lease_namespace

    def post(self, path: str, body: Any = None, **params: Any) -> requests.Response:
        return requests.post(f"{self.proc.url}/api/v1.0{path}", params=params, json=body,
                             timeout=120, headers={"X-Auth-Token": self.token})

    def design(self) -> dict[str, str]:
        """A design reference whose etcd cluster runs on another node (cp1)."""
        design = self.proc.workdir / "design.yaml"
        design.write_text(yaml.safe_dump({
            "schema": "promenade/EtcdClusters/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": "etcd-clusters",
                         "layeringDefinition": {"abstract": False, "layer": "site"},
                         "storagePolicy": "cleartext"},
            "data": {"clusters": [{
                "name": "kubernetes", "client_endpoints": ["http://127.0.0.1:9"],
                "members": [{"name": "cp1", "node": "cp1"}],
                "thresholds": {"minimum_healthy_members": 1}}]}}))
        return {"rel": "design", "href": f"file://{design}", "type": "application/x-yaml"}

    def preview(self, node: str) -> dict[str, Any]:
        """The decommission preview of the node."""
        reply = self.post(f"/nodes/{node}/decommission/preview", self.design())
        assert reply.status_code == 200, reply.text
        result: dict[str, Any] = reply.json()
        return result


@pytest.fixture(scope="package")
def kube_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    yield from kube_support.control_plane(tmp_path_factory)


@pytest.fixture(scope="package")
def admin(kube_plane: ControlPlane) -> Admin:
    admin = Admin(kube_plane)
    admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": NS}})
    return admin


@pytest.fixture(scope="package")
def promenade(kube_plane: ControlPlane, admin: Admin,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Promenade]:
    namespace = kube_support.apply_shipped_rbac(kube_plane)
    sa_token = kube_plane.service_account_token(namespace, SERVICE_ACCOUNT)
    work = tmp_path_factory.mktemp("promenade-kube")
    kubeconfig = kube_plane.token_kubeconfig(work / "kubeconfig", sa_token)
    tokens = write_tokens(work / "tokens.yaml")
    yield from promenade_process(Identity(tokens["admin"], work / "tokens.yaml", sa_token,
                                          kubeconfig, namespace), work,
                                  fence={"sweep_interval": 0})  # tests start their own sweeps


def promenade_process(who: Identity, work: Path, **sections: dict[str, Any]
                      ) -> Iterator[Promenade]:
    """Body of a fixture: a promenade-api as `who`, with its database in `work` and
    `sections` over the usual settings."""
    settings: dict[str, dict[str, Any]] = {
        "auth": {"strategy": "token", "token_file": who.token_file},
        "kubernetes": {"kubeconfig": who.kubeconfig, "lease_namespace": who.lease_namespace,
                       "request_timeout": 10, "poll_interval": 0.1},
        "drain": {"eviction_retry_delay": 0.5, "lock_poll_interval": 0.1},
        "clear_labels": {"poll_interval": 0.1},
        "logging": {"json": "false", "level": "INFO"},
        "database": {"connection": f"sqlite:///{work / 'promenade.db'}"},
    }
    for name, options in sections.items():
        settings.setdefault(name, {}).update(options)
    proc = ServiceProcess("promenade", work, settings)
    try:
        yield Promenade(proc, who)
    finally:
        proc.stop()
