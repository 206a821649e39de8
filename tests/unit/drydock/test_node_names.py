"""Node names at Drydock's edge: the {name} of every node route, the node_names of node
filters (tasks, task previews, /nodefilter) and of /wipeplan are node names as Kubernetes
defines them, or 400 InvalidNodeName, one message per refused name, and nothing is done."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post, task_request

P = "/api/v1.0"
ODD = [".", "..", "%2e%2e", "%2E", "..%2f", "-x", "X", "n_1", "n" * 254, "\u202en1", "a b",
       "\n"]
NODE_ROUTES = [("GET", "/nodes/{}"), ("PATCH", "/nodes/{}"), ("POST", "/nodes/{}/provide"),
               ("POST", "/nodes/{}/reboot"), ("GET", "/nodes/{}/reboot"),
               ("DELETE", "/nodes/{}/reboot/k1")]


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2", "n3"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def _refused(resp: Any, count: int = 1) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json["reason"] == "InvalidNodeName", resp.json
    assert len(resp.json["details"]["messageList"]) == count, resp.json


def _no_tasks(client: falcon.testing.TestClient, site: Site) -> None:
    assert client.simulate_get(f"{P}/tasks", headers=ADMIN).json == []
    assert not site.oob.calls  # no BMC was asked anything


@pytest.mark.parametrize("name", ODD, ids=[ascii(n)[:20] for n in ODD])
def test_every_node_route_and_body_refuses_an_odd_name(api: Any, name: str) -> None:
    client, site = api
    for method, route in NODE_ROUTES:
        path = P + route.format(quote(name, safe=""))
        resp = client.simulate_request(method, path, params={"design_ref": site.href},
                                       json={"retired": True, "mode": "soft", "key": "k1"},
                                       headers=ADMIN)
        _refused(resp)
    # Task creation and preview, node filters, wipe plans: names in bodies.
    body = task_request(site, node_filter={"filter_set": [{"node_names": ["n1", name]},
                                                          {"node_names": [name, "n2"]}]})
    _refused(post(client, f"{P}/tasks", body), count=2)
    _refused(post(client, f"{P}/tasks/preview", body), count=2)
    _refused(post(client, f"{P}/nodefilter", {"design_ref": body["design_ref"],
                                             "node_filter": body["node_filter"]}), count=2)
    _refused(post(client, f"{P}/wipeplan", {"design_ref": body["design_ref"],
                                           "node_names": ["n1", name]}))
    _no_tasks(client, site)


def test_valid_names_still_work(api: Any) -> None:
    client, site = api
    assert client.simulate_get(f"{P}/nodes/n1", params={"design_ref": site.href},
                               headers=ADMIN).status_code == 200
    assert post(client, f"{P}/tasks", task_request(site)).status_code == 201


@pytest.mark.parametrize("name", ["a/../..", "a/..", "../x", "x/./y", "/x"])
def test_a_name_holding_a_slash_is_refused_too(api: Any, name: str) -> None:
    client, site = api
    for method, route in NODE_ROUTES:
        resp = client.simulate_request(method, P + route.format(quote(name, safe="")),
                                       params={"design_ref": site.href}, json={},
                                       headers=ADMIN)
        _refused(resp)
    _no_tasks(client, site)


def test_unknown_paths_are_still_404(api: Any) -> None:
    client, _ = api
    assert client.simulate_get(f"{P}/nodes/n1/nothing", headers=ADMIN).status_code == 404
    assert client.simulate_get(f"{P}/elsewhere", headers=ADMIN).status_code == 404
    assert client.simulate_get(f"{P}/nodes/a%2F..%2F..").status_code == 401
