"""A drain blocked on the real control plane names what blocks it; an operator's leave
(disrupt-pdbs, disrupt-after) deletes exactly the pods of the named PodDisruptionBudget once it
has refused for that long, as Promenade's own ServiceAccount; an unnamed budget and an
eviction lock keep blocking."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.kube import Admin, wait_for

from .conftest import NS, Promenade
from .test_drain_real import apply, budget, deployment, ready_pods, settled_budget

pytestmark = pytest.mark.slow
LOCK = "eviction-lock.berth.io/backup"


def pinned(admin: Admin, app: str, node: str) -> dict[str, Any]:
    """One Ready pod of Deployment `app` on `node` behind a budget allowing no disruption."""
    admin.ready_node(node, pool=node)
    apply(admin, deployment(app, 1, node))
    apply(admin, budget(app, 1))
    [pod] = wait_for(f"the {app} pod Ready", lambda: ready_pods(admin, app))
    assert settled_budget(admin, app, 1)["disruptionsAllowed"] == 0
    return pod


def drain(promenade: Promenade, node: str, **params: Any) -> Any:
    return promenade.post(f"/nodes/{node}/drain", **{"grace-period": 1, **params})


def gone_at(admin: Admin, pod: dict[str, Any], stop: threading.Event,
            seen: list[float]) -> None:
    """When the pod got a deletionTimestamp or left (appended to `seen`)."""
    path = f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}"
    while not stop.is_set():
        reply = admin.call("GET", path)
        if reply.status_code == 404 or reply.json()["metadata"].get("deletionTimestamp"):
            seen.append(time.time())
            return
        stop.wait(0.05)


def test_a_blocked_drain_names_the_budget_its_disruptions_allowed_and_its_pods(
        admin: Admin, promenade: Promenade) -> None:
    pod = pinned(admin, "held", "pk-g1")
    reply = drain(promenade, "pk-g1", timeout=3)
    body = reply.json()
    assert reply.status_code == 500 and body["reason"] == "DrainNodeError", body
    key = f"{NS}/{pod['metadata']['name']}"
    assert [(b["kind"], b["name"], b["disruptions_allowed"], b["pods"])
            for b in body["details"]["blockers"]] == [
        ("PodDisruptionBudget", f"{NS}/held", 0, [key])]
    assert any(m["message"] == f"PodDisruptionBudget {NS}/held (disruptionsAllowed 0) "
               f"refuses the eviction of {key}" for m in body["details"]["messageList"])
    progress = admin.node("pk-g1")["metadata"]["annotations"]["berth.io/drain-progress"]
    assert f'"name":"{NS}/held"' in progress and '"disruptions_allowed":0' in progress
    [same] = admin.pods_on("pk-g1", "held-")
    assert same["metadata"]["uid"] == pod["metadata"]["uid"]


def test_the_named_budget_loses_its_pod_after_the_deadline_and_no_other_budget_does(
        admin: Admin, promenade: Promenade) -> None:
    named = pinned(admin, "named", "pk-h1")
    apply(admin, {**deployment("unnamed", 1, "pk-h1")})
    apply(admin, budget("unnamed", 1))
    [other] = wait_for("the unnamed pod Ready", lambda: ready_pods(admin, "unnamed"))
    settled_budget(admin, "unnamed", 1)
    seen: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=gone_at, args=(admin, named, stop, seen))
    watcher.start()
    started = time.time()
    try:
        reply = drain(promenade, "pk-h1", timeout=12, **{
            "disrupt-pdbs": f"{NS}/named", "disrupt-after": 3})
    finally:
        stop.set()
        watcher.join()
    body = reply.json()
    assert reply.status_code == 500, body  # the unnamed budget still blocks
    named_key = f"{NS}/{named['metadata']['name']}"
    other_key = f"{NS}/{other['metadata']['name']}"
    [entry] = body["details"]["disrupted"]
    assert (entry["pod"], entry["budget"], entry["allowed_by"]) == (named_key, f"{NS}/named",
                                                                    "admin")
    assert entry["disruptions_allowed"] == 0
    assert seen and seen[0] - started >= 3.0, (seen, started)  # never before the deadline
    assert entry["at"] - started >= 3.0
    assert [b["name"] for b in body["details"]["blockers"]] == [f"{NS}/unnamed"]
    assert body["details"]["remaining_pods"] == [other_key]
    assert admin.pods_on("pk-h1", "named-") == []
    [still] = admin.pods_on("pk-h1", "unnamed-")
    assert still["metadata"]["uid"] == other["metadata"]["uid"]


def test_with_the_blocking_budget_named_the_drain_completes(
        admin: Admin, promenade: Promenade) -> None:
    pod = pinned(admin, "lone", "pk-i1")
    reply = drain(promenade, "pk-i1", timeout=30, **{
        "disrupt-pdbs": f"{NS}/lone", "disrupt-after": 3})
    assert reply.status_code == 200, reply.text
    [entry] = reply.json()["details"]["disrupted"]
    assert entry["pod"] == f"{NS}/{pod['metadata']['name']}" and entry["allowed_by"] == "admin"
    assert admin.pods_on("pk-i1", "lone-") == []


def test_an_eviction_lock_is_never_bypassed(admin: Admin, promenade: Promenade) -> None:
    pod = pinned(admin, "locked", "pk-j1")
    admin.call("PATCH", "/api/v1/nodes/pk-j1", {"metadata": {"annotations": {
        LOCK: "nightly-backup"}}}, content_type="application/merge-patch+json"
    ).raise_for_status()
    reply = drain(promenade, "pk-j1", timeout=5, **{
        "disrupt-pdbs": f"{NS}/locked", "disrupt-after": 0})
    body = reply.json()
    assert reply.status_code == 500, body
    key = f"{NS}/{pod['metadata']['name']}"
    assert body["details"]["blockers"] == [{"kind": "EvictionLock", "annotation": LOCK,
                                            "holder": "nightly-backup", "pods": [key]}]
    [same] = admin.pods_on("pk-j1", "locked-")
    assert same["metadata"]["uid"] == pod["metadata"]["uid"]
    assert not same["metadata"].get("deletionTimestamp")
