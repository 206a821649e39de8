"""A decommission phase whose attempt never returns while its Promenade process lives and
renews the run is stuck: the request answers StepStuck naming the phase and the node, a metric
counts it, the node stays held until the attempt returns, its late result is discarded, and a
replay of the same request answers the same StepStuck without running the phase again. Each
phase's attempt state (common.engine.Attempts) is kept in the run across a takeover."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from common.errors import BadGateway
from common.workflow import Done, Retry, StepDef, StepPolicy
from promenade_api import config
from promenade_api.db.runs import FAILED, DecommissionBusy
from promenade_api.decommission import DecommissionParams
from promenade_api.decommission_run import DurableDecommission, RunRequest, fingerprint_of
from promenade_api.errors import DisassociateStepFailure
from promenade_api.metrics import PromenadeMetrics
from promenade_api.phase_engine import Env, NoJournal, Phase, PhaseStuck, run_phases
from promenade_api.service import settings_from_conf

from .test_decommission_durable import die_after_removing_the_member, inputs, runs_of, store


def request(key: str | None = None) -> RunRequest:
    wire = {"query": {}, "keyed": key is not None}
    return RunRequest("node01", DecommissionParams(etcd_ready_timeout=0), wire,
                      fingerprint_of("node01", {}, {"href": "x"}, key), "admin", 5.0)


def wait_for(check, seconds: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        done.wait(0.02)
    raise AssertionError("condition not met in time")


def test_the_attempt_timeout_is_off_by_default(tmp_path: Path) -> None:
    conf = config.load(str(tmp_path / "none.conf"))
    assert conf.decommission.attempt_timeout == 0.0
    assert settings_from_conf(conf).decommission_attempt_timeout == 0.0


def test_a_hung_phase_fails_the_run_as_stuck_and_a_replay_does_not_run_it_again(
        svc, clock, engine, store_clock, kube, etcd):
    svc.settings = replace(svc.settings, decommission_attempt_timeout=60.0)
    metrics = PromenadeMetrics()
    svc.on_stuck = metrics.count_stuck
    kube.add_pod("web", "node01")
    entered, go_on = threading.Event(), threading.Event()
    remove = etcd.remove_member

    def hang(cluster, member):  # a peer that accepted the call and never answers
        entered.set()
        assert go_on.wait(30)
        remove(cluster, member)

    etcd.remove_member = hang
    answers: list[object] = []

    def call() -> None:
        try:
            answers.append(DurableDecommission(svc, store(engine, store_clock, "a"))
                           .answer(request(), inputs()))
        except Exception as exc:
            answers.append(exc)

    first = threading.Thread(target=call)
    first.start()
    assert entered.wait(10)
    clock.now += 30  # within its attempt timeout: still waited for
    first.join(0.5)
    assert first.is_alive()
    clock.now += 31  # 61 s > 60 s while the holder lives and renews
    first.join(10)
    assert not first.is_alive() and isinstance(answers[0], PhaseStuck)
    body = answers[0].to_status()
    assert body["code"] == 500 and body["reason"] == "StepStuck"
    assert "remove-etcd on node01: an attempt has run 61 s, past its attempt timeout of " \
           "60 s" in body["message"]
    assert body["details"]["failed_step"] == "remove-etcd" and body["details"]["node"] == "node01"
    assert metrics.registry.get_sample_value(
        "berth_promenade_steps_stuck_total", {"step": "remove-etcd"}) == 1.0
    run = store(engine, store_clock, "b").latest("node01")
    assert run["state"] == FAILED and run["result"]["reason"] == "StepStuck"
    assert run["lease_owner"] == "a"  # the node stays held while the attempt runs
    stuck = run["phases"][-1]
    assert (stuck["name"], stuck["state"], stuck["attempts"]) == ("remove-etcd", "failed", 1)
    assert stuck["attempt_state"]["attempts"] == 1

    # While the hung attempt runs: the same request answers its StepStuck, another is 409.
    replay = DurableDecommission(svc, store(engine, store_clock, "b"))
    code, again = replay.answer(request(), inputs())
    assert code == 500 and again["reason"] == "StepStuck" and again["details"]["run"] == run["id"]
    with pytest.raises(DecommissionBusy) as busy:
        replay.answer(request(key="admin\0after-looking"), inputs())
    assert "stuck at phase remove-etcd" in busy.value.message

    go_on.set()  # the hung call answers late: its result is discarded, the node freed
    wait_for(lambda: store(engine, store_clock, "b").latest("node01")["lease_owner"] is None)
    run = store(engine, store_clock, "b").latest("node01")
    assert run["state"] == FAILED and run["phases"][-1]["state"] == "failed"
    assert etcd.removed == ["node01"] and kube.evictions == ["web"]

    # A replay of the same request still answers StepStuck and runs nothing again.
    code, again = replay.answer(request(), inputs())
    assert code == 500 and again["reason"] == "StepStuck" and runs_of(engine) == 1
    assert etcd.removed == ["node01"] and kube.evictions == ["web"]

    # A new request (a new Idempotency-Key: the operator looked at the site) is a new run,
    # which starts from the cluster's state: the member is gone, nothing is removed twice.
    code, done = replay.answer(request(key="admin\0after-looking"), inputs())
    assert code == 200 and done["details"]["run"] != run["id"] and runs_of(engine) == 2
    assert etcd.removed == ["node01"] and kube.evictions == ["web"]
    assert metrics.registry.get_sample_value(
        "berth_promenade_steps_stuck_total", {"step": "remove-etcd"}) == 1.0


def test_a_stuck_run_whose_process_died_frees_its_node_after_the_lease(engine, store_clock):
    held = store(engine, store_clock, "a")
    run = held.admit("node01", "f" * 64, {}, "admin").run
    held.finish(run["id"], FAILED, 500, {"reason": "StepStuck"}, release=False)
    other = store(engine, store_clock, "b")
    with pytest.raises(DecommissionBusy):
        other.admit("node01", "e" * 64, {}, "admin")
    store_clock.now += 31  # its process stopped renewing
    assert other.admit("node01", "e" * 64, {}, "admin").kind == "new"


def test_a_takeover_resumes_a_phase_with_its_attempt_state(svc, engine, store_clock, etcd):
    die_after_removing_the_member(svc, engine, store_clock, etcd, request())
    first = store(engine, store_clock, "b").latest("node01")["phases"][-1]["attempt_state"]
    assert first["attempts"] == 1 and first["started"] == store_clock.now
    store_clock.now += 31
    code, _ = DurableDecommission(svc, store(engine, store_clock, "b")).answer(
        request(), inputs())
    assert code == 200
    phases = {p["name"]: p for p in store(engine, store_clock, "b").latest("node01")["phases"]}
    state = phases["remove-etcd"]["attempt_state"]
    assert state["attempts"] == phases["remove-etcd"]["attempts"] == 2
    assert state["started"] == first["started"]  # the same phase, resumed
    assert phases["drain"]["attempt_state"]["attempts"] == 1
    assert etcd.removed == ["node01"]


def test_the_run_store_is_a_lease_store_claiming_only_lapsed_running_runs(engine, store_clock):
    a = store(engine, store_clock, "a")
    running = a.admit("node01", "f" * 64, {}, "admin").run
    stuck = a.admit("node02", "e" * 64, {}, "admin").run
    a.finish(stuck["id"], FAILED, 500, {"reason": "StepStuck"}, release=False)
    b = store(engine, store_clock, "b")
    assert b.claim_units("b", store_clock(), 30.0, 10) == []  # both leases still run
    store_clock.now += 31
    assert b.claim_units("b", store_clock(), 30.0, 10) == [running["id"]]
    assert not a.renew_unit(running["id"], "a", store_clock(), 30.0)
    assert b.renew_unit(running["id"], "b", store_clock(), 30.0)
    taken = b.get(running["id"])
    assert taken["lease_owner"] == "b" and taken["takeovers"] == 1
    b.drop_unit(running["id"], "b")
    assert b.get(running["id"])["lease_owner"] is None
    assert b.get(running["id"])["state"] == "running"  # nothing else changed


def test_phases_are_judged_by_the_engines_rules(clock):
    """A retryable error is tried again within the policy's retries (its backoff slept), a
    wait past the step's timeout fails it with Timeout, as Shipyard's and Drydock's steps."""
    calls: list[str] = []

    def flaky(ctx: object) -> Done:
        calls.append("flaky")
        if len(calls) < 3:
            raise BadGateway("the API answered 502")
        return Done("flaky: succeeded", records=({"message": "flaky: succeeded"},))

    policy = StepPolicy(timeout=60, retries=2, backoff=1.0)
    journal = NoJournal(clock)
    env = Env("node01", clock, clock.sleep)
    phases = [Phase("flaky", StepDef("flaky", flaky, lambda c: policy), True),
              Phase("waits", StepDef("waits", lambda c: Retry(40, "still waiting"),
                                     lambda c: policy), True)]
    with pytest.raises(DisassociateStepFailure) as failed:
        run_phases(phases, None, journal, env)
    assert calls == ["flaky"] * 3 and clock.slept[:2] == [1.0, 2.0]
    assert journal.seen["flaky"].attempts == 3 and journal.seen["flaky"].failures == 0
    assert failed.value.details["failed_step"] == "waits"
    assert "waits: timed out after 60s (still waiting)" in failed.value.message
    assert journal.seen["waits"].attempts == 2
