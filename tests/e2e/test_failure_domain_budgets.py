"""Failure-domain budgets end to end: the design declares rack domains of budget 1; three
redeploys in rack02, run by three worker replicas at once, go out of service one at a time,
a refusing one is 409 naming the rack and its holder,
and a worker killed while its action holds the slot frees it by lease.

The module commits its own design (the demo design plus failure_domains) and commits the
demo design back when it is done."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.e2e.conftest import create, steps_of
from tests.fixtures.services import Berth, ShipyardWorker, wait_for

pytestmark = pytest.mark.slow

RACK02 = ("node04", "node05", "node06")
DOMAINS = [{"name": "rack", "by": "rack", "budget": 1},
           {"name": "etcd", "by": "etcd_cluster", "budget": 1}]
COMMITTED = {"target-revision": "committed"}


def with_domains(design_yaml: str, domains: list[Any]) -> str:
    docs = list(yaml.safe_load_all(design_yaml))
    for doc in docs:
        if doc and doc.get("schema") == "drydock/Region/v1":
            doc["data"]["failure_domains"] = domains
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)


@pytest.fixture(scope="module")
def budgeted(berth: Berth) -> Iterator[int]:
    revision = berth.commit_design(with_domains(berth.site.design_yaml(), DOMAINS))
    try:
        yield revision
    finally:
        berth.commit_design(berth.site.design_yaml())


def slots(berth: Berth) -> list[dict[str, Any]]:
    """The failure-domain slots Drydock holds now."""
    resp = requests.get(f"{berth.procs['drydock'].url}/api/v1.0/budgets/slots",
                        headers={"X-Auth-Token": berth.tokens["admin"]}, timeout=30)
    assert resp.status_code == 200, resp.text
    found: list[dict[str, Any]] = resp.json()["slots"]
    return found


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def step(berth: Berth, action_id: str, sid: str) -> dict[str, Any]:
    view: dict[str, Any] = berth.api("GET", f"/actions/{action_id}/steps/{sid}").json()
    return view


def blocker_of(berth: Berth, action_id: str, node: str) -> dict[str, Any] | None:
    """The blocker a waiting take_budget_slot step shows (None while it does not wait)."""
    s = step(berth, action_id, f"take_budget_slot.{node}")
    blocked = (s.get("details") or {}).get("blocked") if s.get("step_state") == "waiting" else None
    return blocked["blockers"][0] if blocked and blocked.get("blockers") else None


def describe(berth: Berth, action_ids: Any) -> str:
    """The actions' states and their steps' states and messages (for a failed wait)."""
    out = []
    for action_id in action_ids:
        view = berth.api("GET", f"/actions/{action_id}").json()
        out.append(f"{action_id} {view['state']} {view.get('message')}")
        out += [f"  {s['id']} {s['state']} {(s.get('details') or {}).get('message', '')}"
                for s in view["steps"]]
    return "\n".join(out) + "\n" + berth.logs()[-3000:]


def test_bad_declarations_are_refused_at_commit_listing_every_problem(berth: Berth) -> None:
    bad = with_domains(berth.site.design_yaml(), [
        {"name": "rack", "by": "rack", "budget": 0},
        {"name": "pdu", "by": "label", "budget": 1},
        {"name": "rack", "by": "rack", "budget": 1, "budgets": {"rack09": 1}}])
    resp = berth.api("POST", "/configdocs/site", data=bad, params={"buffermode": "replace"},
                     headers={"Content-Type": "application/x-yaml"})
    assert resp.status_code == 201, resp.text
    commit = berth.api("POST", "/commitconfigdocs")
    assert commit.status_code == 400, commit.text
    texts = " | ".join(m["message"] for m in commit.json()["details"]["messageList"])
    for part in ("failure_domains/0/budget", "failure_domains/1", "rack is declared twice",
                 "rack09"):
        assert part in texts, texts


@contextlib.contextmanager
def more_workers(berth: Berth, where: Path, count: int) -> Iterator[list[ShipyardWorker]]:
    """`count` more shipyard-worker processes (replicas) beside the fixture's one; each
    runs one action at a time."""
    extra = [ShipyardWorker(berth.work / "shipyard.conf", where / f"replica{n}")
             for n in range(count)]
    try:
        for worker in extra:
            worker.work.mkdir()
            worker.start()
        yield extra
    finally:
        for worker in extra:
            worker.stop()


def test_three_redeploys_in_one_rack_with_budget_one_run_one_at_a_time(
        berth: Berth, budgeted: int, tmp_path: Path) -> None:
    with more_workers(berth, tmp_path, 2):  # three replicas: the three run at once
        three_redeploys_one_at_a_time(berth)


def three_redeploys_one_at_a_time(berth: Berth) -> None:
    ids = {node: create(berth, "redeploy_server", target_nodes=node, **COMMITTED)["id"]
           for node in RACK02}
    try:
        blocker = wait_for(lambda: next((b for n, i in ids.items()
                                         if (b := blocker_of(berth, i, n))), None),
                           120, "a redeploy waiting for rack02's slot")
    except TimeoutError:
        raise AssertionError(describe(berth, ids.values())) from None
    assert blocker["domain"] == "rack:rack02" and blocker["budget"] == 1
    holder = blocker["holders"][0]
    assert holder["holder"].startswith("shipyard:") and holder["node"] in RACK02
    assert "redeploy_server" in holder["description"]
    windows = []
    for node, action_id in ids.items():
        view = berth.wait_action(action_id, timeout=600)
        assert view["state"] == "complete", view["message"]
        s = steps_of(view)
        # out of service: from the first step after the slot to the node back and relabelled
        windows.append((at(s[f"fence_node.{node}"]["start"]),
                        at(s[f"relabel_nodes.{node}"]["end"]), node))
    windows.sort()
    for (_, end, first), (start, _, second) in zip(windows, windows[1:], strict=False):
        assert end <= start, f"{first} and {second} were out of service at once"
    assert [s for s in slots(berth) if s["domain"] == "rack:rack02"] == []


def test_refused_at_post_then_a_killed_holder_frees_its_slot_by_lease(
        berth: Berth, budgeted: int, faults: Any, tmp_path: Path) -> None:
    """The fixture's worker runs the holder (its decommission hangs at the kubelet's
    shutdown, so it keeps the worker's one engine thread for as long as the test needs: a
    hang in Drydock would end at its release timeout and fail the holder while its worker
    is dead); a second worker runs the waiting action. SIGKILL of the first: nobody renews
    the holder's slot, it lapses, and the waiting action proceeds on the second worker
    (busy with it, so it takes the killed holder over only later)."""
    faults("node04", "kube.kubelet_shutdown")
    first = create(berth, "redeploy_server", target_nodes="node04", **COMMITTED)
    wait_for(lambda: step(berth, first["id"], "take_budget_slot.node04")["state"] == "success",
             120, "the first redeploy to take rack02's slot")
    held = [s for s in slots(berth) if s["domain"] == "rack:rack02"]
    assert [s["node"] for s in held] == ["node04"]
    actions = len(berth.api("GET", "/actions").json())
    refused = berth.api("POST", "/actions", json={"name": "redeploy_server", "parameters": {
        "target_nodes": "node05", "budget": "refuse", **COMMITTED}})
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["reason"] == "BudgetExhausted"
    assert "rack:rack02" in body["message"] and held[0]["holder"] in body["message"]
    assert first["id"] in body["message"]  # the holder's action, by id
    assert len(berth.api("GET", "/actions").json()) == actions  # nothing was created
    with more_workers(berth, tmp_path, 1):
        waiting = create(berth, "redeploy_server", target_nodes="node06", **COMMITTED)
        try:
            wait_for(lambda: blocker_of(berth, waiting["id"], "node06"), 120,
                     "the second redeploy to wait for rack02's slot")
        except TimeoutError:
            raise AssertionError(describe(berth, [first["id"], waiting["id"]])) from None
        berth.worker.kill()  # SIGKILL of the holder's worker: nobody renews its slot
        killed = time.time()
        wait_for(lambda: not [s for s in slots(berth) if s["holder"] == held[0]["holder"]],
                 30, "the killed holder's slot to lapse")
        faults.clear()  # Promenade finishes the holder's decommission; its worker stays dead
        view = berth.wait_action(waiting["id"], timeout=600)
        assert view["state"] == "complete", view["message"]
        assert at(steps_of(view)["take_budget_slot.node06"]["end"]) > killed
        berth.worker.start()
        view = berth.wait_action(first["id"], timeout=600)
    assert view["state"] == "complete", view["message"]


def test_deploy_site_with_refuse_is_409_while_a_domain_of_its_nodes_is_full(
        berth: Berth, budgeted: int) -> None:
    """Another holder (a maintenance script, through Drydock's slot API) has rack02: a
    deploy_site with budget=refuse is refused at POST naming the rack and that holder,
    nothing created, no slot taken; once the slot is given back it would be admitted."""
    url = f"{berth.procs['drydock'].url}/api/v1.0/budgets/slots"
    headers = {"X-Auth-Token": berth.tokens["admin"]}
    ref = f"deckhand+{berth.shipyard}/api/v1.0/revisions/{budgeted}/rendered-documents"
    taken = requests.post(url, headers=headers, timeout=30, json={
        "holder": "ops:rack02-maintenance", "node": "node05", "design_ref": ref,
        "lease_seconds": 600, "description": "PDU swap"})
    assert taken.status_code == 200, taken.text
    try:
        actions = len(berth.api("GET", "/actions").json())
        params = {"budget": "refuse", "allow-intermediate-commits": True}
        refused = berth.api("POST", "/actions", json={"name": "deploy_site",
                                                      "parameters": params})
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert body["reason"] == "BudgetExhausted"
        assert "deploy_site refused (budget=refuse)" in body["message"]
        assert "rack:rack02" in body["message"] and "ops:rack02-maintenance" in body["message"]
        assert [b["domain"] for b in body["details"]["blockers"]] == ["rack:rack02"]
        assert len(berth.api("GET", "/actions").json()) == actions  # nothing was created
        assert [s["holder"] for s in slots(berth)] == ["ops:rack02-maintenance"]
    finally:
        requests.delete(f"{url}/ops:rack02-maintenance", headers=headers, timeout=30)
