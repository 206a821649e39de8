"""A real control plane for a test session (sitesim.kube): built binaries required under
`make test` (BERTH_KUBE_REQUIRED=1), a skip elsewhere when they are not built yet."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import yaml

from common.httpclient import DROPPED_GET, retrying_session
from sitesim.kube.binaries import KubeBinariesMissing, kube_binaries
from sitesim.kube.controlplane import KWOK_LABEL, KWOK_VALUE, ControlPlane, kwok_node
from sitesim.kube.sitekube import DEPLOY_BASE, RBAC_KINDS


def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """Body of a session fixture: one control plane, stopped (by PID) when the session ends."""
    try:
        binaries = kube_binaries(build=False)
    except KubeBinariesMissing as exc:
        if os.environ.get("BERTH_KUBE_REQUIRED") == "1":
            pytest.fail(f"BERTH_KUBE_REQUIRED=1 but {exc}")
        pytest.skip(f"{exc} (run `make kube`; BERTH_KUBE_REQUIRED=1 makes this a failure)")
    with ControlPlane(tmp_path_factory.mktemp("kube"), binaries) as plane:
        yield plane


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 90.0) -> Any:
    """Poll `probe` until it returns something truthy; the timeout only guards against hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class Admin:
    """The apiserver as its admin (client certificate): the test's own view of the cluster."""

    def __init__(self, plane: ControlPlane) -> None:
        self.base = plane.server
        # a GET on a connection the apiserver closed as idle is sent again
        self.session = retrying_session(DROPPED_GET)
        self.session.cert = (str(plane.pki.admin_cert), str(plane.pki.admin_key))
        # Per request: REQUESTS_CA_BUNDLE in the environment would override a session's verify.
        self.verify = str(plane.pki.ca_cert)

    def call(self, method: str, path: str, body: Any = None, token: str | None = None,
             content_type: str = "application/json") -> requests.Response:
        headers = {"Content-Type": content_type}
        if token is not None:  # as that token's owner: no client certificate
            headers["Authorization"] = f"Bearer {token}"
            return requests.request(method, self.base + path, json=body, timeout=30,
                                    verify=self.verify, headers=headers)
        return self.session.request(method, self.base + path, json=body, timeout=30,
                                    verify=self.verify, headers=headers)

    def get(self, path: str) -> dict[str, Any]:
        reply = self.call("GET", path)
        assert reply.status_code == 200, reply.text
        result: dict[str, Any] = reply.json()
        return result

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.call("POST", path, body)
        assert reply.status_code == 201, reply.text
        result: dict[str, Any] = reply.json()
        return result

    def pods_on(self, node: str, prefix: str = "") -> list[dict[str, Any]]:
        """The pods bound to the node and not being deleted, whose name starts with prefix."""
        items = self.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
        return [p for p in items if p["metadata"]["name"].startswith(prefix)
                and not p["metadata"].get("deletionTimestamp")]

    def node(self, name: str) -> dict[str, Any]:
        return self.get(f"/api/v1/nodes/{name}")

    def ready(self, name: str) -> str:
        """The status of the Node's Ready condition (Unknown when it has none)."""
        conditions = self.node(name).get("status", {}).get("conditions", [])
        return next((c["status"] for c in conditions if c["type"] == "Ready"), "Unknown")

    def kubelet(self, name: str, running: bool) -> None:
        """Start or stop kwok's heartbeats for the Node (its kubelet)."""
        reply = self.call("PATCH", f"/api/v1/nodes/{name}",
                          {"metadata": {"labels": {KWOK_LABEL: KWOK_VALUE if running else None}}},
                          content_type="application/merge-patch+json")
        assert reply.status_code == 200, reply.text

    def ready_node(self, name: str, **labels: str) -> dict[str, Any]:
        """A Node kwok runs (its label, kwok:// providerID), once it is Ready."""
        self.create("/api/v1/nodes", kwok_node(name, labels))

        def ready() -> dict[str, Any] | None:
            node = self.node(name)
            conditions = node.get("status", {}).get("conditions", [])
            up = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            return node if up else None

        node: dict[str, Any] = wait_for(f"node {name} Ready", ready)
        return node


def apply_shipped_rbac(plane: ControlPlane) -> str:
    """Apply the RBAC objects of deploy/kubernetes/base as `kubectl kustomize` renders them
    (namespace filled in, ServiceAccount subjects included); Berth's namespace."""
    docs = [d for d in yaml.safe_load_all(plane.kubectl("kustomize", str(DEPLOY_BASE))) if d]
    rbac = [d for d in docs if d["kind"] in RBAC_KINDS]
    [namespace] = [d["metadata"]["name"] for d in rbac if d["kind"] == "Namespace"]
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(rbac))
    return str(namespace)
