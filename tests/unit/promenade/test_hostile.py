"""Hostile input on Promenade: design references only from allowed places, Unicode digits
in timeouts refused, Idempotency-Key honoured on its POSTs."""

import pytest

P = "/api/v1.0"


@pytest.mark.parametrize("href", ["file:///dev/zero", "file:///etc/passwd",
                                  "http://169.254.169.254/latest/meta-data/",
                                  "http://127.0.0.1:22/"])
def test_etcd_health_refuses_design_refs_outside_the_allowed_places(api, href):
    client, h = api
    resp = client.simulate_get(f"{P}/etcd-cluster-health-statuses",
                               params={"design_ref": href}, headers=h)
    assert resp.status_code == 400 and resp.json["reason"] == "DesignRefNotAllowed"


def test_validatedesign_refuses_a_file_outside_the_root(api):
    client, h = api
    resp = client.simulate_post(f"{P}/validatedesign", json={"href": "file:///dev/zero"},
                                headers=h)
    assert resp.status_code == 400 and resp.json["reason"] == "DesignRefNotAllowed"


@pytest.mark.parametrize("value", ["\u0663", "\u00b2", "1\u0663", "9" * 30, " 1 2"])
def test_a_non_ascii_or_absurd_timeout_is_400_and_changes_nothing(api, kube, value):
    client, h = api
    resp = client.simulate_post(f"{P}/nodes/node04/drain", params={"timeout": value},
                                headers=h)
    assert resp.status_code == 400
    assert not kube.nodes["node04"].unschedulable


def test_a_post_replayed_with_its_key_is_not_run_twice(api, kube):
    client, h = api
    kube.add_pod("web", "node04")
    key = {**h, "Idempotency-Key": "drain-node04-1"}

    def drain(query: str = "timeout=60&grace-period=5"):
        return client.simulate_post(f"{P}/nodes/node04/drain", query_string=query, headers=key)

    one = drain()
    kube.add_pod("late", "node04")
    two = drain()
    assert one.status_code == 200, one.text
    assert two.status_code == 200 and one.json == two.json
    assert two.headers["Idempotent-Replayed"] == "true"
    assert drain("timeout=61&grace-period=5").status_code == 422
