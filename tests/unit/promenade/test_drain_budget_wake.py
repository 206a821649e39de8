"""A drain retries the pods a PodDisruptionBudget refused as soon as the budget allows again
(one eviction per allowed disruption), at the latest after the retry delay, within the
drain timeout."""

from __future__ import annotations

import io
import json
import time
from dataclasses import replace

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.rest import RESTResponse

from promenade_api.errors import DrainNodeError
from promenade_api.kube.budget import Budget
from promenade_api.kube.client import ApiFailure, KubeClient, eviction_outcome
from promenade_api.kube.drain import Drainer, DrainSettings
from promenade_api.kube.model import Pod
from promenade_api.kube.refusals import Refusals

DELAY = 5.0
READY_AFTER = 1.0  # a replacement is Ready, and the budget allows again, this long after
WEB = {"matchLabels": {"app": "web"}}


def drainer(kube, clock) -> Drainer:
    return Drainer(kube, DrainSettings(retry_delay=DELAY, lock_poll_interval=1.0),
                   clock=clock, sleep=clock.sleep)


def web(kube, count: int, allowed: int = 1, after: float | None = READY_AFTER) -> None:
    """`count` web pods on node04 behind a budget allowing `allowed`; each eviction's
    replacement is Ready `after` seconds later and gives the disruption back."""
    for n in range(1, count + 1):
        kube.add_pod(f"web-{n}", "node04", labels={"app": "web"})
    kube.set_budget(Budget("default", "web", WEB, disruptions_allowed=allowed,
                           current_healthy=count, desired_healthy=count - allowed,
                           expected_pods=count))


def replacements(kube, clock, after: float, gives: int = 1) -> None:
    def ready() -> None:
        budget = kube.budget("default/web")
        kube.set_budget(replace(budget, disruptions_allowed=budget.disruptions_allowed + gives))

    kube.on_evict = lambda pod: clock.at(after, ready)


@pytest.fixture
def watched(kube, clock):
    kube.on_watch = clock.sleep
    kube.now = clock
    return kube


def evict_calls(kube) -> int:
    return sum(1 for op, _ in kube.calls if op == "evict")


def test_a_budget_that_allows_again_wakes_its_pods_before_the_retry_delay(watched, clock):
    kube = watched
    web(kube, 4)
    replacements(kube, clock, READY_AFTER)
    start = clock()
    report = drainer(kube, clock).run("node04", 600, 30)
    assert sorted(report.evicted) == [f"default/web-{n}" for n in range(1, 5)]
    times = sorted(kube.evicted_at.values())
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # Each next pod goes once the previous one's replacement gave the disruption back (never
    # sooner: the budget held) and within a watch step of it, not a retry delay later.
    assert all(READY_AFTER <= gap <= READY_AFTER + 0.2 for gap in gaps), gaps
    assert times[-1] - start < 2 * READY_AFTER * 3  # the old rounds: 3 x DELAY = 15 s
    # One round of refusals (3 pods), then one eviction per state that allowed one.
    assert evict_calls(kube) == 4 + 3


def test_one_eviction_per_allowed_disruption_and_the_next_after_a_new_state(watched, clock):
    kube = watched
    web(kube, 5)
    evicted = []

    def gives_back(count: int) -> None:
        budget = kube.budget("default/web")
        kube.set_budget(replace(budget, disruptions_allowed=budget.disruptions_allowed + count))

    def on_evict(pod: Pod) -> None:
        evicted.append(pod.name)
        if len(evicted) == 1:  # a state allowing 2 at once
            clock.at(READY_AFTER, lambda: gives_back(2))
        elif len(evicted) in (3, 4):  # then 1 at a time
            clock.at(2.0, lambda: gives_back(1))

    kube.on_evict = on_evict
    start = clock()
    drainer(kube, clock).run("node04", 600, 30)
    times = sorted(round(t - start, 1) for t in kube.evicted_at.values())
    assert times[0] == 0.0
    assert times[1] == times[2] == pytest.approx(READY_AFTER, abs=0.2)  # both at that state
    assert times[3] == pytest.approx(times[2] + 2.0, abs=0.2)  # a later state, not sooner
    assert times[4] == pytest.approx(times[3] + 2.0, abs=0.2)
    assert evict_calls(kube) == 5 + 4  # no eviction was tried that the state did not allow


def test_a_state_already_used_lets_no_second_pod_go():
    """Refusals alone: a state allowing 1 sends one pod; the same state seen again sends
    none; a newer state allowing 1 sends the next."""
    class Watch:
        def __init__(self) -> None:
            self.states: list[Budget] = []

        def watch_budgets(self, namespace, version, timeout, wake):
            while self.states:
                if wake(self.states.pop(0)):
                    return "rv"
            return "rv"

    watch, now = Watch(), [0.0]
    refusals = Refusals(watch, DELAY, lambda: now[0], lambda s: None)  # type: ignore[arg-type]
    pods = [Pod("default", f"web-{n}", f"uid-{n}") for n in (1, 2, 3)]
    for pod in pods:
        refusals.refused(pod, "PDB web", "web")
    assert refusals.take() == []
    allowing = Budget("default", "web", WEB, disruptions_allowed=1, version="7")
    watch.states = [allowing]
    refusals.wait(1.0)
    assert refusals.take() == [pods[0]]
    watch.states = [allowing]  # the same state again (our eviction's write not seen yet)
    refusals.wait(1.0)
    assert refusals.take() == []
    watch.states = [replace(allowing, disruptions_allowed=0, version="8"),
                    replace(allowing, version="9")]
    refusals.wait(1.0)
    assert refusals.take() == [pods[1]]
    refusals.evicted(pods[1])
    # A state written before that eviction (web-2 not yet in disruptedPods) is stale.
    watch.states = [replace(allowing, version="10")]
    refusals.wait(1.0)
    assert refusals.take() == []
    watch.states = [replace(allowing, version="11", disruptions_allowed=0,
                            disrupted=frozenset({"web-2"})),
                    replace(allowing, version="12", settled=False)]  # a new spec: not yet
    refusals.wait(1.0)
    assert refusals.take() == []
    now[0] = DELAY + 0.1  # the upper bound: tried again whatever the watch says
    assert refusals.take() == [pods[2]]


def test_without_a_change_of_the_budget_pods_are_retried_every_retry_delay(watched, clock):
    kube = watched
    web(kube, 2, allowed=0)
    start = clock()
    with pytest.raises(DrainNodeError) as err:
        drainer(kube, clock).run("node04", 12, 2)
    assert evict_calls(kube) == 2 * 3  # at 0, 5 and 10 s
    # The drain timeout bounds the wait on the budget: it fails at 12 s, not at 15.
    assert clock() - start == pytest.approx(12.0, abs=0.2)
    body = err.value.to_status()
    assert sorted(body["details"]["remaining_pods"]) == ["default/web-1", "default/web-2"]
    texts = [m["message"] for m in body["details"]["messageList"] if m["error"]]
    assert any("default/web-1" in t and "The disruption budget web needs" in t
               for t in texts), texts
    assert kube.nodes["node04"].unschedulable


def test_a_deleted_budget_lets_all_its_pods_go_at_once(watched, clock):
    kube = watched
    web(kube, 3, allowed=0)
    clock.at(0.5, lambda: kube.delete_budget("default/web"))
    start = clock()
    drainer(kube, clock).run("node04", 60, 10)
    assert sorted(kube.evicted_at) == ["web-1", "web-2", "web-3"]
    assert all(t - start < 1.0 for t in kube.evicted_at.values())


def test_the_eviction_api_429_names_the_refusing_budget():
    body = {"kind": "Status", "code": 429, "message": "Cannot evict pod as it would violate "
            "the pod's disruption budget.", "details": {"causes": [
                {"reason": "DisruptionBudget",
                 "message": "The disruption budget web-a needs 3 healthy pods and has 3 "
                            "currently"}]}}
    assert eviction_outcome(ApiFailure(429, body["message"], body)).budget == "web-a"
    stale = {"kind": "Status", "code": 429, "message": "Cannot evict pod",
             "details": {"causes": [{"reason": "DisruptionBudget", "message":
                                     "The disruption budget db is still being processed by "
                                     "the server."}]}}
    assert eviction_outcome(ApiFailure(429, "Cannot evict pod", stale)).budget == "db"
    throttled = {"kind": "Status", "code": 429, "message": "Too many requests"}
    assert eviction_outcome(ApiFailure(429, "Too many requests", throttled)).budget == ""


def test_a_budget_status_of_an_older_generation_allows_nothing():
    obj = {"metadata": {"namespace": "d", "name": "web", "generation": 2,
                        "resourceVersion": "41"},
           "status": {"observedGeneration": 1, "disruptionsAllowed": 1}}
    assert Budget.from_obj(obj).allowing == 0
    obj["status"]["observedGeneration"] = 2
    assert Budget.from_obj(obj).allowing == 1 and Budget.from_obj(obj).version == "41"


class Ending(io.BytesIO):
    """A response body that ends (as a server closing the stream) once read."""

    @property
    def closed(self) -> bool:
        return self.tell() >= len(self.getbuffer())


class Answering(k8s.ApiClient):
    """An ApiClient whose every request is answered with `status` and these watch events."""

    def __init__(self, events: list[dict], status: int = 200) -> None:
        super().__init__(k8s.Configuration(host="https://kube.invalid"))
        self.events, self.status, self.urls = events, status, []

    def call_api(self, method, url, header_params=None, body=None, post_params=None,
                 _request_timeout=None):
        self.urls.append(url)
        payload = b"".join(json.dumps(e).encode() + b"\n" for e in self.events)
        return RESTResponse(urllib3.HTTPResponse(
            body=Ending(payload), status=self.status, preload_content=False,
            headers={"Content-Type": "application/json"}))


def pdb_event(kind: str, rv: str, allowed: int) -> dict:
    return {"type": kind, "object": {
        "metadata": {"namespace": "demo", "name": "web", "resourceVersion": rv,
                     "generation": 1},
        "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                   "disruptedPods": {"web-1": "2026-01-01T00:00:00Z"}}}}


def test_the_client_watches_a_namespace_s_budgets_and_resumes_where_it_stopped():
    api = Answering([pdb_event("ADDED", "5", 0), pdb_event("MODIFIED", "6", 1),
                     pdb_event("MODIFIED", "7", 0)])
    seen: list[Budget] = []
    cursor = KubeClient(api).watch_budgets(
        "demo", "", 5.0, lambda b: seen.append(b) or b.allowing > 0)
    assert cursor == "6" and [b.version for b in seen] == ["5", "6"]
    assert seen[1].disrupted == {"web-1"} and seen[1].key == "demo/web"
    assert api.urls[0].startswith(
        "https://kube.invalid/apis/policy/v1/namespaces/demo/poddisruptionbudgets?")
    assert "watch=true" in api.urls[0] and "resourceVersion" not in api.urls[0]

    gone = Answering([pdb_event("DELETED", "8", 0)])
    seen.clear()
    assert KubeClient(gone).watch_budgets(None, "7", 5.0, seen.append) == "8"
    assert seen[0].gone and "resourceVersion=7" in gone.urls[0]
    assert gone.urls[0].startswith("https://kube.invalid/apis/policy/v1/poddisruptionbudgets?")


def test_a_watch_the_api_ends_starts_again_and_a_refused_one_waits_out_its_timeout():
    expired = Answering([{"type": "ERROR", "object": {"code": 410, "message": "too old"}}])
    started = time.monotonic()
    assert KubeClient(expired).watch_budgets("demo", "7", 5.0, lambda b: True) == ""
    assert time.monotonic() - started < 1.0  # at once, from the current states next time
    refused = Answering([], status=403)
    started = time.monotonic()
    assert KubeClient(refused).watch_budgets("demo", "", 0.3, lambda b: True) == ""
    assert time.monotonic() - started >= 0.3  # no watch: the retry delay paces the drain
