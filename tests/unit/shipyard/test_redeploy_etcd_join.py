"""redeploy_server's join_etcd step: control-plane nodes rejoin etcd through Promenade's
learner path after they are relabelled; other nodes have nothing to join."""

from __future__ import annotations

from tests.unit.shipyard.conftest import Harness


def test_an_etcd_node_rejoins_through_promenade_after_relabelling(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert harness.promenade.effects[-2:] == [("put_labels", "node01"), ("join_etcd", "node01")]
    step = harness.step(action["id"], "join_etcd.node01")
    assert step["state"] == "success"
    assert step["details"]["promenade"]["message"] == "The etcd members of node01 are voting " \
        "members"


def test_a_node_of_no_etcd_cluster_has_nothing_to_join(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node03"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert ("join_etcd", "node03") not in harness.promenade.effects
    assert not [c for c in harness.promenade.calls if c.op == "join_etcd"]
    assert harness.step(action["id"], "join_etcd.node03")["state"] == "success"


def test_a_refused_join_is_asked_again_until_promenade_accepts(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.refuse_join.add("node01")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.run_until(lambda: len([c for c in harness.promenade.calls
                                   if c.op == "join_etcd"]) >= 2, rounds=200)
    assert harness.api.get(action["id"])["state"] == "running"
    assert ("join_etcd", "node01") not in harness.promenade.effects  # nothing joined yet
    harness.promenade.refuse_join.clear()
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert harness.promenade.effects.count(("join_etcd", "node01")) == 1
