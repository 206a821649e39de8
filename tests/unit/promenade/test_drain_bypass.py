"""A blocked drain names what blocks it; an operator's leave deletes exactly the pods of the
named PodDisruptionBudgets that still refuse after the deadline, and nothing else."""

from __future__ import annotations

import pytest

from common.disruption import Leave
from promenade_api.errors import DrainNodeError
from promenade_api.kube.budget import Budget
from promenade_api.kube.drain import Drainer, DrainSettings

SOLO = {"matchLabels": {"app": "solo"}}
OTHER = {"matchLabels": {"app": "other"}}


def drainer(kube, clock) -> Drainer:
    kube.on_watch, kube.now = clock.sleep, clock
    return Drainer(kube, DrainSettings(retry_delay=1.0, lock_poll_interval=1.0),
                   clock=clock, sleep=clock.sleep, wall=clock)


def blocked(kube) -> None:
    kube.add_pod("solo-1", "node04", labels={"app": "solo"})
    kube.add_pod("other-1", "node04", labels={"app": "other"})
    kube.add_pod("free-1", "node04")
    kube.set_budget(Budget("default", "solo", SOLO, disruptions_allowed=0, current_healthy=1,
                           desired_healthy=1, expected_pods=1))
    kube.set_budget(Budget("default", "other", OTHER, disruptions_allowed=0,
                           current_healthy=1, desired_healthy=1, expected_pods=1))


def test_a_blocked_drain_names_each_budget_its_disruptions_allowed_and_its_pods(kube, clock):
    blocked(kube)
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 10, 1)
    blockers = err.value.details["blockers"]
    assert [(b["name"], b["disruptions_allowed"], b["pods"]) for b in blockers] == [
        ("default/other", 0, ["default/other-1"]), ("default/solo", 0, ["default/solo-1"])]
    assert any(m["message"] == "PodDisruptionBudget default/solo (disruptionsAllowed 0) "
               "refuses the eviction of default/solo-1" for m in err.value.messages)
    assert sorted(kube.pod_names("node04")) == ["other-1", "solo-1"]


def test_a_named_budget_loses_its_pods_only_after_the_deadline_and_no_other(kube, clock):
    blocked(kube)
    start = clock()
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 20, 1, Leave(("default/solo",), 3), "alice")
    deleted = [(op, pod) for op, pod in kube.calls if op == "delete_pod"]
    assert deleted == [("delete_pod", "solo-1")]
    [entry] = err.value.details["disrupted"]
    assert entry["pod"] == "default/solo-1" and entry["budget"] == "default/solo"
    assert entry["allowed_by"] == "alice" and entry["disruptions_allowed"] == 0
    assert entry["at"] >= start + 3  # never before the deadline
    # The budget that was not named still blocks, and is named.
    assert kube.pod_names("node04") == ["other-1"]
    assert [b["name"] for b in err.value.details["blockers"]] == ["default/other"]


def test_with_the_only_blocking_budget_named_the_drain_completes(kube, clock):
    kube.add_pod("solo-1", "node04", labels={"app": "solo"})
    kube.set_budget(Budget("default", "solo", SOLO, disruptions_allowed=0, current_healthy=1,
                           desired_healthy=1, expected_pods=1))
    report = drainer(kube, clock).run("node04", 60, 1, Leave(("default/solo",), 3), "alice")
    assert kube.pod_names("node04") == []
    assert [d["pod"] for d in report.disrupted] == ["default/solo-1"]
    assert report.evicted == [] and report.as_dict()["disrupted"] == report.disrupted


def test_a_budget_that_allows_again_before_the_deadline_is_evicted_not_deleted(kube, clock):
    kube.add_pod("solo-1", "node04", labels={"app": "solo"})
    budget = Budget("default", "solo", SOLO, disruptions_allowed=0, current_healthy=2,
                    desired_healthy=1, expected_pods=2)
    kube.set_budget(budget)
    clock.at(1.5, lambda: kube.set_budget(Budget(
        "default", "solo", SOLO, disruptions_allowed=1, current_healthy=2, desired_healthy=1,
        expected_pods=2)))
    report = drainer(kube, clock).run("node04", 60, 1, Leave(("default/solo",), 30), "alice")
    assert report.evicted == ["default/solo-1"] and report.disrupted == []


def test_an_eviction_lock_is_never_bypassed_and_names_its_holder_and_pods(kube, clock):
    kube.add_pod("solo-1", "node04", labels={"app": "solo"})
    kube.set_budget(Budget("default", "solo", SOLO, disruptions_allowed=0, current_healthy=1,
                           desired_healthy=1, expected_pods=1))
    kube.patch_node("node04", annotations={"eviction-lock.berth.io/db": "db-operator"})
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 10, 1, Leave(("default/solo",), 0), "alice")
    assert kube.pod_names("node04") == ["solo-1"]
    assert not [c for c in kube.calls if c[0] in ("delete_pod", "evict")]
    assert err.value.details["blockers"] == [{
        "kind": "EvictionLock", "annotation": "eviction-lock.berth.io/db",
        "holder": "db-operator", "pods": ["default/solo-1"]}]


P = "/api/v1.0"


@pytest.fixture
def tokens(api, tmp_path, kube, clock):
    import yaml
    kube.on_watch, kube.now = clock.sleep, clock
    raw = yaml.safe_load((tmp_path / "tokens.yaml").read_text())
    return {entry["user"]: token for token, entry in raw.items()}


def solo_blocking(kube) -> None:
    kube.add_pod("solo-1", "node04", labels={"app": "solo"})
    kube.set_budget(Budget("default", "solo", SOLO, disruptions_allowed=0, current_healthy=1,
                           desired_healthy=1, expected_pods=1))


def test_bad_leave_parameters_are_400_listing_every_problem(api, kube):
    client, h = api
    reply = client.simulate_post(f"{P}/nodes/node04/drain", headers=h, query_string=(
        "timeout=60&grace-period=1&disrupt-pdbs=Default/solo,nons,demo/ok,demo/ok"
        "&disrupt-after=999999"))
    assert reply.status_code == 400, reply.json
    text = [m["message"] for m in reply.json["details"]["messageList"]]
    assert len(text) == 4, text  # bad namespace, no namespace, twice, over the maximum
    assert any("disrupt-pdbs[0]" in t and "namespace" in t for t in text)
    assert any("disrupt-pdbs[1]" in t for t in text)
    assert any("named twice" in t for t in text)
    assert any("between 0 and 86400" in t for t in text)
    assert not kube.nodes["node04"].unschedulable  # nothing changed
    half = client.simulate_post(f"{P}/nodes/node04/drain", headers=h,
                                query_string="disrupt-pdbs=demo/ok")
    assert half.status_code == 400 and "needs disrupt-after" in half.text


def test_a_reader_cannot_give_leave_to_disrupt(api, kube, tokens):
    client, _ = api
    reply = client.simulate_post(f"{P}/nodes/node04/drain",
                                 headers={"X-Auth-Token": tokens["reader"]},
                                 query_string="disrupt-pdbs=default/solo&disrupt-after=3")
    assert reply.status_code == 403
    assert not kube.nodes["node04"].unschedulable


def test_a_service_must_pass_on_the_operator_who_gave_the_leave(api, kube, tokens, caplog):
    client, _ = api
    solo_blocking(kube)
    service = {"X-Auth-Token": tokens["berth-service"]}
    query = "timeout=60&grace-period=1&disrupt-pdbs=default/solo&disrupt-after=3"
    refused = client.simulate_post(f"{P}/nodes/node04/drain", headers=service,
                                   query_string=query)
    assert refused.status_code == 403 and refused.json["reason"] == "OperatorRequired"
    assert not kube.nodes["node04"].unschedulable
    with caplog.at_level("WARNING"):
        done = client.simulate_post(f"{P}/nodes/node04/drain", query_string=query,
                                    headers={**service, "X-End-User": "alice"})
    assert done.status_code == 200, done.json
    [entry] = done.json["details"]["disrupted"]
    assert entry["allowed_by"] == "alice" and entry["pod"] == "default/solo-1"
    assert "deleting default/solo-1 (disruption allowed by alice)" in caplog.text
    assert "alice gives leave to disrupt PodDisruptionBudget(s) default/solo after 3s " \
        "(passed on by berth-service)" in caplog.text


def test_an_operators_own_client_header_is_not_who_gave_the_leave(api, kube, tokens):
    client, h = api
    solo_blocking(kube)
    done = client.simulate_post(
        f"{P}/nodes/node04/drain", headers={**h, "X-End-User": "mallory"},
        query_string="timeout=60&grace-period=1&disrupt-pdbs=default/solo&disrupt-after=0")
    assert done.status_code == 200, done.json
    assert done.json["details"]["disrupted"][0]["allowed_by"] == "admin"
