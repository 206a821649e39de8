"""Shipyard's HTTP clients of Promenade and Drydock: paths, bodies, headers, error mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from common.clients.drydock import DrydockClient
from common.clients.promenade import PromenadeClient
from common.context import RequestContext
from common.errors import BadGateway, NotFound
from common.httpclient import ServiceClient
from shipyard_api.clients.ports import node_names_filter, node_ready

MARKER = "3b0e8d2a-9c4f-4e7b-8a1d-2f6c5e4d3b2a"


class Recorder(requests.Session):
    """A session answering from a table and recording every request."""

    def __init__(self, answers: dict[tuple[str, str], tuple[int, Any]]) -> None:
        super().__init__()
        self.answers = answers
        self.sent: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kw: Any) -> requests.Response:  # type: ignore[override]
        path = url.split("127.0.0.1:1", 1)[1]
        self.sent.append({"method": method, "path": path, **kw})
        code, body = self.answers[(method, path)]
        resp = requests.Response()
        resp.status_code = code
        resp._content = b"" if body is None else json.dumps(body).encode()
        return resp


def client(answers: dict[tuple[str, str], tuple[int, Any]]) -> tuple[ServiceClient, Recorder]:
    session = Recorder(answers)
    return ServiceClient("http://127.0.0.1:1", session=session, retries=0), session


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1.0", "metadata": {}, "status": "Failure",
            "message": reason, "reason": reason, "code": code, "retry": False,
            "details": {"errorCount": 1, "messageList": [{"message": reason, "error": True,
                                                           "kind": "SimpleMessage"}]}}


def test_decommission_sends_the_design_ref_timeouts_marker_and_key() -> None:
    http, session = client({("POST", "/api/v1.0/nodes/node01/decommission"):
                            (200, {"code": 200})})
    ctx = RequestContext(marker=MARKER)
    PromenadeClient(http).decommission("node01", "deckhand+http://s/r/1", {
        "drain-node-timeout": 30, "drain-node-grace-period": 10, "etcd-ready-timeout": 5},
        ctx=ctx, key="A:decommission.node01")
    sent = session.sent[0]
    assert json.loads(sent["data"]) == {"rel": "design", "href": "deckhand+http://s/r/1",
                                        "type": "application/x-yaml"}
    assert sent["params"] == {"drain-node-timeout": 30, "drain-node-grace-period": 10,
                              "etcd-ready-timeout": 5}
    assert sent["headers"]["X-Context-Marker"] == MARKER
    assert sent["headers"]["Idempotency-Key"] == "A:decommission.node01"
    assert sent["timeout"][1] >= 35  # waits for all phases of the synchronous call


def test_decommission_failure_keeps_promenade_status_body() -> None:
    body = status(500, "DisassociateStepFailure")
    http, _ = client({("POST", "/api/v1.0/nodes/n1/decommission"): (500, body)})
    with pytest.raises(BadGateway) as err:
        PromenadeClient(http).decommission("n1", "x", {}, ctx=RequestContext(), key="k")
    assert err.value.peer_status and err.value.peer_status["reason"] == \
        "DisassociateStepFailure"


def test_node_status_of_unknown_node_is_none() -> None:
    http, _ = client({("GET", "/api/v1.0/nodes/gone"): (404, status(404, "NotFound"))})
    assert PromenadeClient(http).node_status("gone", ctx=RequestContext()) is None


def test_drydock_task_creation_and_read() -> None:
    http, session = client({("POST", "/api/v1.0/tasks"): (201, {"task_id": "t1"}),
                            ("GET", "/api/v1.0/tasks/t1"): (200, {"task_id": "t1",
                                                                  "status": "running"})})
    dd = DrydockClient(http)
    ctx = RequestContext(marker=MARKER)
    task = dd.create_task("destroy_nodes", "ref", node_names_filter(["n1"]),
                          {"preserve_local_storage": True}, ctx=ctx, key="A:destroy.n1")
    assert task["task_id"] == "t1"
    assert json.loads(session.sent[0]["data"]) == {
        "action": "destroy_nodes", "design_ref": "ref",
        "node_filter": {"filter_set_type": "union",
                        "filter_set": [{"filter_type": "union", "node_names": ["n1"]}]},
        "options": {"preserve_local_storage": True}}
    assert session.sent[0]["headers"]["Idempotency-Key"] == "A:destroy.n1"
    assert dd.get_task("t1", ctx=ctx)["status"] == "running"
    assert session.sent[1]["params"] == {"subtaskerrors": "true"}


def test_drydock_task_tree_asks_every_layer() -> None:
    tree = {"init_task_id": "t1", "t1": {"task_id": "t1"}, "t2": {"task_id": "t2"}}
    http, session = client({("GET", "/api/v1.0/tasks/t1"): (200, tree)})
    assert DrydockClient(http).task_tree("t1", ctx=RequestContext()) == tree
    assert session.sent[0]["params"] == {"subtaskerrors": "true", "layers": "-1"}


def test_missing_task_is_not_found() -> None:
    http, _ = client({("GET", "/api/v1.0/tasks/t9"): (404, status(404, "NotFound"))})
    with pytest.raises(NotFound):
        DrydockClient(http).get_task("t9", ctx=RequestContext())


@pytest.mark.parametrize(("view", "ready"), [
    ({"kubelet": {"ready": "True"}}, True), ({"kubelet": {"ready": "False"}}, False),
    ({"kubelet": {"ready": "Unknown"}}, False), ({"kubelet": {}}, False),
    (None, False)])
def test_node_ready_reads_promenade_views(view: Any, ready: bool) -> None:
    assert node_ready(view) is ready


def test_select_nodes_posts_the_filter_and_returns_names() -> None:
    http, session = client({("POST", "/api/v1.0/nodefilter"): (200, ["n1", "n2"])})
    names = DrydockClient(http).select_nodes("ref", node_names_filter(["n1", "n2"]),
                                             ctx=RequestContext())
    assert names == ["n1", "n2"]
    assert json.loads(session.sent[0]["data"])["design_ref"] == "ref"


def test_nodes_asks_for_the_design_when_given() -> None:
    http, session = client({("GET", "/api/v1.0/nodes"): (200, [{"hostname": "n1"}])})
    assert DrydockClient(http).nodes("ref", ctx=RequestContext()) == [{"hostname": "n1"}]
    assert session.sent[0]["params"] == {"design_ref": "ref"}
