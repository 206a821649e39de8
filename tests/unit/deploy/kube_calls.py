"""The Kubernetes API requests Promenade's KubeClient makes, as the RBAC grants they need.

Every KubePort method of the real KubeClient is called against a recording ApiClient that
answers each request with a canned object; each request is then classified the way the API
server's RequestInfo does (API group, resource[/subresource], verb), giving the exact
(group, resource, verb) set the ServiceAccount must be granted.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import urllib3
from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse

from promenade_api.kube.client import KubeClient
from promenade_api.kube.model import Lease, Pod
from promenade_api.kube.port import KubePort

Grant = tuple[str, str, str]  # (api group, resource or "nonResourceURL:<path>", verb)

NODE = {"metadata": {"name": "node01", "labels": {}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
POD = {"metadata": {"namespace": "default", "name": "web-1", "uid": "uid-1",
                    "resourceVersion": "7"},
       "spec": {"nodeName": "node01"}, "status": {"phase": "Running"}}
LEASE = {"metadata": {"name": "etcd-kubernetes", "resourceVersion": "3"},
         "spec": {"holderIdentity": "promenade-a", "leaseDurationSeconds": 60}}


class RecordingApiClient(k8s.ApiClient):
    """An ApiClient whose HTTP layer records (method, url) and answers from canned objects."""

    def __init__(self) -> None:
        super().__init__(k8s.Configuration(host="https://kube.invalid"))
        self.requests: list[tuple[str, str]] = []

    def call_api(self, method: str, url: str, header_params: Any = None, body: Any = None,
                 post_params: Any = None, _request_timeout: Any = None) -> RESTResponse:
        self.requests.append((method, url))
        status, payload = _answer(method, url)
        raw = urllib3.HTTPResponse(body=io.BytesIO(payload), status=status,
                                   headers={"Content-Type": "application/json"},
                                   preload_content=False)
        return RESTResponse(raw)


def _answer(method: str, url: str) -> tuple[int, bytes]:
    parts = urlsplit(url)
    path, query = parts.path, parse_qs(parts.query)
    if path == "/version":
        body: Any = {"gitVersion": "v1.31.0"}
    elif path == "/api/v1/nodes" and query.get("watch") == ["true"]:
        return 200, json.dumps({"type": "MODIFIED", "object": NODE}).encode() + b"\n"
    elif "/nodes/" in path:
        body = NODE
    elif path == "/api/v1/pods" and query.get("watch") == ["true"]:
        event = {"type": "DELETED", "object": {**POD, "metadata": {
            **POD["metadata"], "resourceVersion": "8"}}}
        return 200, json.dumps(event).encode() + b"\n"
    elif path.endswith("/poddisruptionbudgets") and query.get("watch") == ["true"]:
        budget = {"metadata": {"namespace": "default", "name": "web", "resourceVersion": "9"},
                  "status": {"disruptionsAllowed": 1}}
        return 200, json.dumps({"type": "MODIFIED", "object": budget}).encode() + b"\n"
    elif path == "/api/v1/pods":
        body = {"items": [POD], "metadata": {"resourceVersion": "7"}}
    elif path in ("/api/v1/nodes", "/apis/policy/v1/poddisruptionbudgets"):
        body = {"items": []}
    elif "/leases" in path:
        body = LEASE
    else:
        body = {}
    return (201 if method == "POST" else 200), json.dumps(body).encode()


def port_calls() -> dict[str, Callable[[KubePort], object]]:
    """One call of every KubePort method (the keys must be exactly the port's methods)."""
    pod = Pod.from_obj(POD)
    lease = Lease(name="etcd-kubernetes", holder="promenade-a", renewed_at=1.0, duration=60,
                  version="3")
    return {
        "ping": lambda k: k.ping(),
        "get_node": lambda k: k.get_node("node01"),
        "patch_node": lambda k: k.patch_node("node01", labels={"a": "b"},
                                             annotations={"c": None}, unschedulable=True),
        "add_taint": lambda k: k.add_taint("node01", {"key": "node.kubernetes.io/out-of-service",
                                                      "value": "nodeshutdown",
                                                      "effect": "NoExecute"}),
        "remove_taint": lambda k: k.remove_taint(
            "node01", "node.kubernetes.io/out-of-service", "NoExecute",
            annotations={"berth.io/out-of-service-taint": None}),
        "list_pods": lambda k: k.list_pods("node01"),
        "list_nodes": lambda k: k.list_nodes(),
        "list_all_pods": lambda k: k.list_all_pods(),
        "list_budgets": lambda k: k.list_budgets(),
        "owner_exists": lambda k: k.owner_exists("DaemonSet", "kube-system", "calico"),
        "evict": lambda k: k.evict(pod, 30),
        "delete_pod": lambda k: k.delete_pod(pod, 30),
        "wait_pods_gone": lambda k: k.wait_pods_gone("node01", {"uid-1"}, 5.0),
        "delete_node": lambda k: k.delete_node("node01"),
        "watch_node": lambda k: k.watch_node("node01", "7", 5.0),
        "watch_budgets": lambda k: k.watch_budgets("default", "", 5.0, lambda b: True),
        "get_lease": lambda k: k.get_lease("berth", "etcd-kubernetes"),
        "create_lease": lambda k: k.create_lease("berth", lease),
        "update_lease": lambda k: k.update_lease("berth", lease),
    }


def port_methods() -> set[str]:
    return {name for name, value in vars(KubePort).items()
            if callable(value) and not name.startswith("_")}


def recorded_requests() -> list[tuple[str, str]]:
    """(method, url) of every request KubeClient makes for one call of each port method."""
    api = RecordingApiClient()
    kube = KubeClient(api, request_timeout=5.0, poll_interval=0.01)
    for call in port_calls().values():
        call(kube)
    return api.requests


def grant_of(method: str, url: str) -> tuple[Grant, str | None]:
    """The RBAC grant a request needs, and the namespace it is made in (None: cluster)."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis"):
        return ("", f"nonResourceURL:{parts.path}", method.lower()), None
    rest = segments[2:] if segments[0] == "api" else segments[3:]
    group = "" if segments[0] == "api" else segments[1]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{rest[0]}/{rest[2]}"
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
    if method == "GET":
        watching = parse_qs(parts.query).get("watch") == ["true"]
        verb = "get" if named else ("watch" if watching else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    assert verb, f"unexpected method {method}"
    return (group, resource, verb), namespace
