"""GET /nodes/{name}?wait=S&since=V waits on a Kubernetes watch of the Node: answered when it
changed, at the timeout unchanged, at once over the waiter cap or for an old version; the
kubelet shutdown wakes on the node's change instead of sleeping its poll interval."""

from __future__ import annotations

from dataclasses import replace

import falcon.testing

from promenade_api import config
from promenade_api.app import Deps, create_app
from tests.support.services import write_tokens

P = "/api/v1.0"


def versioned(kube, name: str, version: str) -> None:  # type: ignore[no-untyped-def]
    kube.nodes[name] = replace(kube.nodes[name], version=version)


def get(client, h, **params):  # type: ignore[no-untyped-def]
    return client.simulate_get(f"{P}/nodes/node04", params=params, headers=h)


def test_a_long_poll_answers_when_the_node_changed(api, kube):
    client, h = api
    versioned(kube, "node04", "5")
    kube.on_watch = lambda seconds: kube.nodes.__setitem__("node04", replace(
        kube.nodes["node04"], ready="False", version="6"))
    resp = get(client, h, wait="20", since="5")
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "changed"
    assert resp.headers["X-Node-Version"] == "6" and resp.json["kubelet"]["ready"] == "False"
    assert ("watch_node", "node04") in kube.calls


def test_a_long_poll_ends_at_its_wait_with_the_node_unchanged(api, kube):
    client, h = api
    versioned(kube, "node04", "5")
    waited: list[float] = []
    kube.on_watch = waited.append
    resp = get(client, h, wait="300", since="5")
    assert resp.headers["X-Long-Poll"] == "timeout" and resp.headers["X-Node-Version"] == "5"
    assert waited == [20.0]  # capped at [api] long_poll_max_wait


def test_an_old_version_is_answered_without_a_watch(api, kube):
    client, h = api
    versioned(kube, "node04", "9")
    resp = get(client, h, wait="20", since="5")
    assert resp.status_code == 200 and "X-Long-Poll" not in resp.headers
    assert ("watch_node", "node04") not in kube.calls


def test_over_the_cap_a_long_poll_is_answered_at_once(tmp_path, svc, kube):
    tokens = write_tokens(tmp_path / "tokens.yaml")
    conf_path = tmp_path / "promenade.conf"
    conf_path.write_text(f"[auth]\nstrategy = token\ntoken_file = {tmp_path}/tokens.yaml\n"
                         "[api]\nlong_poll_waiters = 0\n")
    app = create_app(config.load(str(conf_path)), Deps(promenade=svc, health_checks=[]))
    client, h = falcon.testing.TestClient(app), {"X-Auth-Token": tokens["admin"]}
    versioned(kube, "node04", "5")
    resp = get(client, h, wait="20", since="5")
    assert resp.headers["X-Long-Poll"] == "busy"
    assert ("watch_node", "node04") not in kube.calls


def test_bad_long_poll_parameters_are_listed_with_the_others(api):
    client, h = api
    resp = get(client, h, wait="later", since="x", color="red")
    assert resp.status_code == 400 and resp.json["details"]["errorCount"] == 3


def test_the_kubelet_shutdown_wakes_on_the_nodes_change(api, kube, clock):
    client, h = api
    versioned(kube, "node04", "5")
    kube.on_watch = lambda seconds: kube.nodes.__setitem__("node04", replace(
        kube.nodes["node04"], ready="Unknown", version="6"))
    resp = client.simulate_post(f"{P}/nodes/node04/shutdown-kubelet", headers=h)
    assert resp.status_code == 200
    assert kube.calls.count(("watch_node", "node04")) == 1
