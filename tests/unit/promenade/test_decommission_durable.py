"""A decommission as a durable run (fakes for Kubernetes and etcd, the runs in SQLite and
PostgreSQL): each phase's start and outcome are recorded; a run whose process died is taken
over by a replay, or with no request by another process looking for such runs, and resumed
from its first unfinished phase without repeating a recorded effect; a replay while it runs
joins it; another decommission of the busy node is refused with the run named."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from common.disruption import Leave
from common.errors import NotFound
from promenade_api.db.models import DecommissionRun
from promenade_api.db.runs import DecommissionBusy, RunStore
from promenade_api.decommission import DecommissionParams
from promenade_api.decommission_run import (
    DurableDecommission,
    RunRequest,
    fingerprint_of,
    params_from,
    params_json,
)
from promenade_api.etcd.design import load_clusters

from .conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"


class Died(BaseException):
    """The process stops right here (nothing below it is written)."""


def store(engine, store_clock, owner: str) -> RunStore:
    return RunStore(engine, lease=30.0, owner=owner, clock=store_clock)


def request(node: str = "node01", query: dict | None = None, wait: float = 5.0) -> RunRequest:
    query = query or {}
    return RunRequest(node, DecommissionParams(etcd_ready_timeout=0), {"query": query},
                      fingerprint_of(node, query, {"href": "x"}, None), "admin", wait)


def inputs():
    clusters = load_clusters([etcd_doc([kubernetes_cluster(2)])])
    return clusters, {"node01", "node02", "node03"}


def runs_of(engine) -> int:
    with Session(engine) as s:
        return int(s.scalar(select(func.count()).select_from(DecommissionRun)) or 0)


def die_after_removing_the_member(svc, engine, store_clock, etcd, req: RunRequest) -> None:
    """Promenade "a" stops right after etcd removed node01's member: the member is gone, the
    phase's outcome is never written."""
    remove = etcd.remove_member

    def remove_then_die(cluster, member):
        remove(cluster, member)
        raise Died()

    etcd.remove_member = remove_then_die
    with pytest.raises(Died):
        DurableDecommission(svc, store(engine, store_clock, "a")).answer(req, inputs())
    etcd.remove_member = remove


def test_a_run_records_every_phase_start_and_outcome(svc, engine, store_clock, kube, etcd):
    kube.add_pod("web", "node01")
    code, body = DurableDecommission(svc, store(engine, store_clock, "a")).answer(
        request(), inputs())
    assert code == 200 and body["details"]["run"]
    run = store(engine, store_clock, "a").latest("node01")
    assert run["state"] == "succeeded" and run["status_code"] == 200
    assert run["result"] == body and run["lease_owner"] is None
    assert [(p["name"], p["state"], p["attempts"]) for p in run["phases"]] == [
        ("drain", "succeeded", 1), ("clear-labels", "succeeded", 1),
        ("agent-locks", "succeeded", 1), ("remove-etcd", "succeeded", 1),
        ("etcd-ready", "succeeded", 1), ("shutdown-kubelet", "failed-not-fatal", 1)]
    assert all(p["started_at"] and p["ended_at"] and p["outcome"] for p in run["phases"])
    assert kube.evictions == ["web"] and etcd.removed == ["node01"]


def test_a_takeover_resumes_at_the_unfinished_phase_and_repeats_no_effect(
        svc, engine, store_clock, kube, etcd):
    kube.add_pod("web", "node01")
    die_after_removing_the_member(svc, engine, store_clock, etcd, request())
    left = store(engine, store_clock, "b").latest("node01")
    assert left["state"] == "running" and left["phase"] == "remove-etcd"
    assert left["lease_owner"] == "a"
    assert [p["state"] for p in left["phases"]] == ["succeeded"] * 3 + ["running"]

    # The replay while the dead process's lease still runs joins and then waits.
    with pytest.raises(DecommissionBusy) as busy:
        DurableDecommission(svc, store(engine, store_clock, "b")).answer(
            request(wait=0.0), inputs())
    assert busy.value.code == 409 and busy.value.details["phase"] == "remove-etcd"
    assert busy.value.details["run"] == left["id"]

    store_clock.now += 31  # the lease lapsed: the replay takes the run over
    code, body = DurableDecommission(svc, store(engine, store_clock, "b")).answer(
        request(), inputs())
    assert code == 200 and body["details"]["run"] == left["id"]
    run = store(engine, store_clock, "b").latest("node01")
    assert run["state"] == "succeeded" and run["takeovers"] == 1 and runs_of(engine) == 1
    attempts = {p["name"]: p["attempts"] for p in run["phases"]}
    assert attempts["drain"] == 1 and attempts["remove-etcd"] == 2
    assert kube.evictions == ["web"] and etcd.removed == ["node01"]  # each effect once
    text = [m["message"] for m in body["details"]["messageList"]]
    assert "drain: recorded before a takeover, not run again" in text
    assert any(t.startswith("remove-etcd: started by an earlier attempt without an outcome")
               for t in text)


def test_a_replay_while_the_run_is_active_joins_it(svc, engine, store_clock, kube, etcd):
    release, entered = threading.Event(), threading.Event()
    remove = etcd.remove_member

    def slow_remove(cluster, member):
        entered.set()
        assert release.wait(10)
        remove(cluster, member)

    etcd.remove_member = slow_remove
    answers: dict[str, tuple[int, dict]] = {}

    def call(name: str, owner: str) -> None:
        runner = DurableDecommission(svc, store(engine, store_clock, owner), poll=0.01)
        answers[name] = runner.answer(request(), inputs())

    first = threading.Thread(target=call, args=("first", "a"))
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=call, args=("second", "b"))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting for the same run
    release.set()
    first.join(10)
    second.join(10)
    assert answers["first"] == answers["second"] and answers["first"][0] == 200
    assert runs_of(engine) == 1 and etcd.removed == ["node01"]


def test_another_decommission_of_a_busy_node_is_409_naming_the_run(
        svc, engine, store_clock):
    s = store(engine, store_clock, "a")
    active = s.admit("node01", "f" * 64, {}, "admin").run
    s.phase_started(active["id"], "drain")
    with pytest.raises(DecommissionBusy) as busy:
        DurableDecommission(svc, store(engine, store_clock, "b")).answer(
            request(query={"fenced": "true"}), inputs())
    assert busy.value.details == {"node": "node01", "run": active["id"], "phase": "drain",
                                  "state": "running"}
    assert active["id"] in busy.value.message


def test_a_failed_run_answers_its_error_and_frees_the_node(svc, engine, store_clock, etcd):
    etcd.down.add("node03")
    runner = DurableDecommission(svc, store(engine, store_clock, "a"))
    with pytest.raises(Exception) as failed:
        runner.answer(request(), inputs())
    run = runner.store.latest("node01")
    assert run["state"] == "failed" and run["status_code"] == 500
    assert run["result"]["reason"] == "DisassociateStepFailure"
    assert run["result"]["details"]["run"] == run["id"] == failed.value.details["run"]
    assert run["phases"][-1]["name"] == "remove-etcd"
    assert run["phases"][-1]["state"] == "failed"
    etcd.down.clear()
    assert runner.answer(request(), inputs())[0] == 200  # a new run
    assert runs_of(engine) == 2


def test_api_get_shows_the_run_and_a_keyed_replay_joins(api, kube, etcd, design):
    client, h = api
    ref = {"rel": "design", "href": design(etcd_doc([kubernetes_cluster(2)])),
           "type": "application/x-yaml"}
    assert client.simulate_get(f"{P}/nodes/node01/decommission",
                               headers=h).status_code == 404
    release, entered = threading.Event(), threading.Event()
    remove = etcd.remove_member

    def slow_remove(cluster, member):
        entered.set()
        assert release.wait(10)
        remove(cluster, member)

    etcd.remove_member = slow_remove
    keyed = {**h, "Idempotency-Key": "k-1"}
    results: dict[str, object] = {}

    def post(name: str) -> None:
        results[name] = client.simulate_post(f"{P}/nodes/node01/decommission", json=ref,
                                             headers=keyed,
                                             query_string="etcd-ready-timeout=0")

    first = threading.Thread(target=post, args=("first",))
    first.start()
    assert entered.wait(10)
    running = client.simulate_get(f"{P}/nodes/node01/decommission", headers=h).json
    assert running["state"] == "running" and running["phase"] == "remove-etcd"
    second = threading.Thread(target=post, args=("second",))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # not 409 RequestInProgress: it waits for the run
    release.set()
    first.join(10)
    second.join(10)
    one, two = results["first"], results["second"]
    assert one.status_code == two.status_code == 200, (one.json, two.json)
    assert one.json["details"]["run"] == two.json["details"]["run"] == running["id"]
    done = client.simulate_get(f"{P}/nodes/node01/decommission", headers=h).json
    assert done["state"] == "succeeded" and done["id"] == running["id"]
    assert etcd.removed == ["node01"]


def keyed(wait: float = 5.0) -> RunRequest:
    """A request with an Idempotency-Key (its run's answer is kept for its replays)."""
    params = DecommissionParams(drain_timeout=77, drain_grace_period=7, etcd_ready_timeout=0,
                                leave=Leave(("ns/web",), 30), operator="op")
    return RunRequest("node01", params, {"query": {}, "keyed": True},
                      fingerprint_of("node01", {}, {"href": "x"}, "admin\0k"), "admin", wait)


def test_the_parameters_kept_with_a_run_are_the_requests():
    params = keyed().params
    assert params_from(params_json(params)) == params
    assert params_from(params_json(DecommissionParams(fenced=True))) == DecommissionParams(
        fenced=True)


def test_a_run_whose_process_stopped_is_resumed_with_no_request_and_a_replay_gets_its_answer(
        svc, engine, store_clock, kube, etcd, monkeypatch):
    kube.add_pod("web", "node01")
    monkeypatch.setattr(svc, "decommission_inputs", lambda ref, ctx: inputs())
    die_after_removing_the_member(svc, engine, store_clock, etcd, keyed())
    left = store(engine, store_clock, "b").latest("node01")
    assert left["params"]["request"]["drain_timeout"] == 77

    other = DurableDecommission(svc, store(engine, store_clock, "b"))
    assert other.resume_lapsed() == []  # "a"'s lease still runs: nothing is taken
    assert store(engine, store_clock, "b").latest("node01")["lease_owner"] == "a"

    store_clock.now += 31  # the lease lapsed
    for thread in other.resume_lapsed():
        thread.join(10)
    run = store(engine, store_clock, "b").latest("node01")
    assert run["id"] == left["id"] and run["state"] == "succeeded" and run["takeovers"] == 1
    assert run["lease_owner"] is None
    attempts = {p["name"]: p["attempts"] for p in run["phases"]}
    assert attempts["drain"] == 1 and attempts["remove-etcd"] == 2
    assert kube.evictions == ["web"] and etcd.removed == ["node01"]  # each effect once
    assert other.resume_lapsed() == []

    code, body = DurableDecommission(svc, store(engine, store_clock, "c")).answer(
        keyed(), inputs())
    assert (code, body) == (200, run["result"]) and body["details"]["run"] == left["id"]
    assert runs_of(engine) == 1 and etcd.removed == ["node01"]


def test_a_run_that_cannot_be_resumed_fails_naming_why_and_frees_the_node(
        svc, engine, store_clock, etcd, monkeypatch):
    def unreadable(ref, ctx):
        raise NotFound("Design file:///gone.yaml not found")

    monkeypatch.setattr(svc, "decommission_inputs", unreadable)
    die_after_removing_the_member(svc, engine, store_clock, etcd, keyed())
    store_clock.now += 31
    for thread in DurableDecommission(svc, store(engine, store_clock, "b")).resume_lapsed():
        thread.join(10)
    run = store(engine, store_clock, "b").latest("node01")
    assert run["state"] == "failed" and run["status_code"] == 409
    assert run["result"]["reason"] == "RunNotResumable"
    assert "its design could not be read: Design file:///gone.yaml not found" in \
        run["result"]["message"] and "phase remove-etcd" in run["result"]["message"]
    monkeypatch.setattr(svc, "decommission_inputs", lambda ref, ctx: inputs())
    code, _ = DurableDecommission(svc, store(engine, store_clock, "c")).answer(
        keyed(), inputs())
    assert code == 200 and runs_of(engine) == 2  # the node was free: a new run


def test_a_run_admitted_without_its_parameters_is_not_resumed_with_defaults(
        svc, engine, store_clock):
    s = store(engine, store_clock, "a")
    old = s.admit("node01", "f" * 64, {"query": {"fenced": "true"}}, "admin").run
    s.phase_started(old["id"], "fence")
    store_clock.now += 31
    for thread in DurableDecommission(svc, store(engine, store_clock, "b")).resume_lapsed():
        thread.join(10)
    run = store(engine, store_clock, "b").get(old["id"])
    assert run["state"] == "failed" and run["result"]["reason"] == "RunNotResumable"
    assert "its parameters were not kept with it" in run["result"]["message"]
    assert [p["attempts"] for p in run["phases"]] == [1]  # nothing was run again


def test_a_run_whose_process_keeps_stopping_is_not_resumed_forever(
        svc, engine, store_clock, etcd, monkeypatch):
    monkeypatch.setattr(svc, "decommission_inputs", lambda ref, ctx: inputs())
    die_after_removing_the_member(svc, engine, store_clock, etcd, keyed())

    def die(cluster):
        raise Died()  # remove-etcd's first read ends its process every time

    monkeypatch.setattr(etcd, "members", die)
    resumer = DurableDecommission(svc, store(engine, store_clock, "b"), max_takeovers=2)
    died = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_type))
    for _ in range(3):
        store_clock.now += 31
        for thread in resumer.resume_lapsed():
            thread.join(10)
    run = store(engine, store_clock, "b").latest("node01")
    assert died == [Died, Died] and run["takeovers"] == 3
    assert run["state"] == "failed" and run["result"]["reason"] == "RunNotResumable"
    assert "its Promenade process stopped 3 times while running it" in run["result"]["message"]
    assert [p["attempts"] for p in run["phases"] if p["name"] == "remove-etcd"] == [3]
