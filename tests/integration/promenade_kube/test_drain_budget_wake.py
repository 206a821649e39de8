"""A drain through a PodDisruptionBudget on the real control plane goes at the pace of the
budget's status (written by the disruption controller as replacements become Ready), not at
the pace of the eviction retry delay: each next pod is evicted soon after the replacement of
the previous one is Ready, never before."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.kube import Admin, wait_for

from .conftest import NS, Promenade, promenade_process
from .test_drain_real import apply, budget, deployment, ready_pods, settled_budget

pytestmark = pytest.mark.slow
DELAY = 20.0  # [drain] eviction_retry_delay: a retry on this timer alone is unmistakable,
# and the bounds below (fractions of it) leave a loaded machine room for the wake itself
PODS = 4  # behind minAvailable 3: one disruption at a time


@pytest.fixture(scope="module")
def patient_promenade(promenade: Promenade,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Promenade]:
    """Promenade as the same ServiceAccount, retrying refused evictions after DELAY."""
    yield from promenade_process(promenade.who, tmp_path_factory.mktemp("promenade-wake"),
                                 drain={"eviction_retry_delay": DELAY})


class Timeline:
    """When each `wake` pod was first seen evicted (deletionTimestamp) or Ready, and the
    fewest pods Ready and not terminating at any moment, from a watch (every change, in
    order)."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self.evicted: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self.fewest = PODS
        self._up: dict[str, bool] = {}
        self._stop = threading.Event()
        path = f"/api/v1/namespaces/{NS}/pods?labelSelector=application%3Dwake"
        listing = admin.get(path)
        for pod in listing["items"]:
            self._see(pod, 0.0)
        self.fewest = sum(self._up.values())
        self._path, self._rv = path, listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run)

    def _see(self, pod: dict[str, Any], now: float, deleted: bool = False) -> None:
        name = pod["metadata"]["name"]
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in pod.get("status", {}).get("conditions", []))
        if pod["metadata"].get("deletionTimestamp"):
            self.evicted.setdefault(name, now)
        elif ready:
            self.ready.setdefault(name, now)
        self._up[name] = ready and not deleted and not pod["metadata"].get("deletionTimestamp")
        self.fewest = min(self.fewest, sum(self._up.values()))

    def _run(self) -> None:
        while not self._stop.is_set():
            with self.admin.session.get(
                    f"{self.admin.base}{self._path}&watch=true&timeoutSeconds=1"
                    f"&resourceVersion={self._rv}", stream=True, timeout=10,
                    verify=self.admin.verify) as resp:
                assert resp.status_code == 200, resp.text
                for line in resp.iter_lines():
                    event = json.loads(line)
                    assert event["type"] != "ERROR", event
                    pod = event["object"]
                    self._rv = pod["metadata"]["resourceVersion"]
                    self._see(pod, time.monotonic(), deleted=event["type"] == "DELETED")

    def __enter__(self) -> Timeline:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_each_eviction_follows_the_previous_replacement_not_the_retry_delay(
        admin: Admin, patient_promenade: Promenade) -> None:
    admin.ready_node("pw-1", pool="w")
    admin.ready_node("pw-2")  # joins the pool once the pods run on pw-1
    apply(admin, deployment("wake", PODS, "w"))
    apply(admin, budget("wake", PODS - 1))
    originals = {p["metadata"]["name"] for p in wait_for(
        f"{PODS} Ready wake pods", lambda: (lambda r: r if len(r) == PODS else None)(
            ready_pods(admin, "wake")))}
    assert settled_budget(admin, "wake", PODS)["disruptionsAllowed"] == 1
    admin.call("PATCH", "/api/v1/nodes/pw-2", {"metadata": {"labels": {"pool": "w"}}},
               content_type="application/merge-patch+json").raise_for_status()

    with Timeline(admin) as seen:
        started = time.monotonic()
        reply = patient_promenade.post("/nodes/pw-1/drain", timeout=120,
                                       **{"grace-period": 1})
        took = time.monotonic() - started
    assert reply.status_code == 200, reply.text
    assert sorted(reply.json()["details"]["evicted"]) == sorted(
        f"{NS}/{name}" for name in originals), reply.text
    assert admin.pods_on("pw-1", "wake-") == []

    evicted = sorted(seen.evicted[name] for name in originals)
    # The k-th replacement is the k-th evicted pod's: created once that pod is evicted, and
    # Ready (giving the disruption back) before the next eviction, as the budget requires.
    ready = sorted(at for name, at in seen.ready.items() if name not in originals)
    assert len(ready) == PODS, (evicted, ready)
    assert seen.fewest >= PODS - 1, seen.fewest  # never more than one pod down
    for k in range(PODS - 1):
        assert evicted[k] <= ready[k] <= evicted[k + 1], (evicted, ready)
        # The next eviction followed that replacement at once, not a retry delay later.
        assert evicted[k + 1] - ready[k] < DELAY / 4, (evicted, ready)
    # The retry timer alone would need PODS - 1 rounds of DELAY after the first eviction.
    assert evicted[-1] - evicted[0] < DELAY, evicted
    assert took < (PODS - 1) * DELAY / 2, took
