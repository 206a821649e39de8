"""Odd node names never reach Kubernetes: every Promenade route that takes a node name answers
400 InvalidNodeName, and a recording Kubernetes API (real HTTP, under the real KubeClient) sees
no request at all; the client itself refuses a dot name when called directly."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import falcon.testing
import pytest

from common.designref import DesignResolver, RefPolicy
from common.errors import BadRequest
from promenade_api import config
from promenade_api.app import Deps, create_app, routes
from promenade_api.etcd.fake import FakeEtcd
from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.kube.model import Lease, Pod
from promenade_api.service import Promenade
from tests.support.services import write_tokens
from tests.unit.promenade.conftest import FAST

ODD_NAMES = [".", "..", "%2e%2e", "%2E", "a/../..", "..%2f", "", "-x", "X", "n" * 254,
             "\u202enode01", "node\u200f01", "\u2066node01\u2069", "a b", "\n"]
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node01", "resourceVersion": "7", "labels": {}},
        "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@dataclass
class Recorder:
    """A Kubernetes API that records every request (method, raw path) and answers a Node for
    /api/v1/nodes/node01, an empty list for the collections, and 404 otherwise."""

    url: str = ""
    seen: list[tuple[str, str]] = field(default_factory=list)


@pytest.fixture
def kube_api() -> Iterator[Recorder]:
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            recorder.seen.append((self.command, self.path))
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            path = self.path.split("?")[0]
            if path == "/api/v1/nodes/node01":
                code, body = 200, NODE
            elif path in ("/api/v1/pods", "/api/v1/nodes",
                          "/apis/policy/v1/poddisruptionbudgets"):
                code, body = 200, {"kind": "List", "items": [], "metadata": {}}
            else:
                code, body = 404, {"kind": "Status", "code": 404, "message": "not found"}
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def kube(kube_api: Recorder) -> KubeClient:
    return KubeClient(load_api_client(api_url=kube_api.url), request_timeout=5,
                      poll_interval=0.05)


@pytest.fixture
def client(tmp_path: Path, kube: KubeClient) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n")
    resolver = DesignResolver(RefPolicy(file_root=str(tmp_path)), cache_size=0)
    svc = Promenade(kube, FakeEtcd(), resolver, FAST)
    app = create_app(config.load(str(conf_path)), Deps(promenade=svc, health_checks=[]))
    return falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}


def node_routes() -> list[tuple[str, str]]:
    """(method, template) of every route of promenade_api.app that takes a node name."""
    found = []
    for template, resource in routes(None):  # type: ignore[arg-type]
        if "{node_id}" in template:
            found += [(m.upper(), template) for m in ("get", "post", "put")
                      if hasattr(resource, f"on_{m}")]
    return found


def test_every_node_route_is_exercised() -> None:
    assert len(node_routes()) == 12  # a new route taking a node name is exercised here too


def _send(client: falcon.testing.TestClient, headers: dict[str, str], method: str,
          path: str) -> falcon.testing.Result:
    body = {} if "node-labels" in path else {"rel": "design", "href": "file:///none.yaml",
                                               "type": "application/x-yaml"}
    return client.simulate_request(method, path, headers=headers, json=body)


@pytest.mark.parametrize("name", ODD_NAMES, ids=[ascii(n)[:24] for n in ODD_NAMES])
def test_odd_names_are_refused_before_kubernetes(
        name: str, client: tuple[falcon.testing.TestClient, dict[str, str]],
        kube_api: Recorder) -> None:
    api, headers = client
    for method, template in node_routes():
        # As a careful client sends it (one quoted segment) and as a careless one does.
        for segment in dict.fromkeys([quote(name, safe=""), name]):
            path = template.replace("{node_id}", segment)
            result = _send(api, headers, method, path)
            where = f"{method} {path!a}"
            assert result.status_code == 400, (where, result.text)
            assert result.json["reason"] == "InvalidNodeName", (where, result.json)
            assert result.json["details"]["messageList"], where
    assert kube_api.seen == []


def test_preview_refuses_odd_names_in_leaving(
        client: tuple[falcon.testing.TestClient, dict[str, str]], kube_api: Recorder) -> None:
    api, headers = client
    result = api.simulate_post("/api/v1.0/nodes/node01/decommission/preview", headers=headers,
                               params={"leaving": "node02,..,X"},
                               json={"rel": "design", "href": "file:///none.yaml",
                                     "type": "application/x-yaml"})
    assert result.status_code == 400 and result.json["reason"] == "InvalidNodeName"
    listed = [m["message"] for m in result.json["details"]["messageList"]]
    assert len(listed) == 2 and "'..'" in listed[0] and "'X'" in listed[1]
    assert kube_api.seen == []


def test_a_valid_name_reaches_only_its_own_node_object(
        client: tuple[falcon.testing.TestClient, dict[str, str]], kube_api: Recorder) -> None:
    api, headers = client
    result = api.simulate_get("/api/v1.0/nodes/node01", headers=headers)
    assert result.status_code == 200, result.text
    paths = {p.split("?")[0] for _, p in kube_api.seen}
    assert "/api/v1/nodes/node01" in paths
    assert paths <= {"/api/v1/nodes/node01", "/api/v1/pods", "/api/v1/nodes"}


def test_an_unknown_path_under_a_valid_node_is_404(
        client: tuple[falcon.testing.TestClient, dict[str, str]], kube_api: Recorder) -> None:
    api, headers = client
    assert api.simulate_get("/api/v1.0/nodes/node01/nothing", headers=headers).status_code == 404
    assert api.simulate_get("/api/v1.0/nodes/a%2F..%2F..").status_code == 401
    assert api.simulate_get("/api/v1.0/elsewhere", headers=headers).status_code == 404
    assert kube_api.seen == []


@pytest.mark.parametrize("name", [".", "..", "", "a/..", "%2e%2e", "X"])
def test_the_client_refuses_a_bad_node_name_called_directly(
        name: str, kube: KubeClient, kube_api: Recorder) -> None:
    calls = [lambda: kube.get_node(name), lambda: kube.delete_node(name),
             lambda: kube.patch_node(name, labels={"a": "b"}),
             lambda: kube.add_taint(name, {"key": "k", "effect": "NoSchedule"}),
             lambda: kube.list_pods(name), lambda: kube.watch_node(name, "1", 1.0),
             lambda: kube.wait_pods_gone(name, ["u"], 1.0)]
    for call in calls:
        with pytest.raises(BadRequest) as refused:
            call()
        assert refused.value.to_status()["reason"] == "InvalidNodeName"
    assert kube_api.seen == []


def test_other_objects_are_one_segment_too(kube: KubeClient, kube_api: Recorder) -> None:
    pod = Pod.from_obj({"metadata": {"name": "..", "namespace": "default", "uid": "u"},
                        "spec": {"nodeName": "node01"}})
    with pytest.raises(Exception, match="cannot name one object"):
        kube.delete_pod(pod, None)
    with pytest.raises(Exception, match="cannot name one object"):
        kube.get_lease("..", "x")
    with pytest.raises(Exception, match="cannot name one object"):
        kube.update_lease("ns", Lease(name=".", holder=None, renewed_at=None, duration=1,
                                      version=""))
    assert kube_api.seen == []
