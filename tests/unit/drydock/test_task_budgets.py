"""Drydock's own tasks and reboots take failure-domain slots: two destroy_nodes tasks in one
rack with budget 1 never hold the rack at once (the second waits, naming the domain and the
holder; with budget=refuse it is 409 and nothing is created); a task acting under a holder
that has the slots (a Shipyard redeploy) takes none; a reboot holds a slot from before its
power-off until the node is on again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from common.context import RequestContext
from common.errors import Conflict
from drydock_api.app import Deps, create_app
from drydock_api.budgets.slots import Claim
from drydock_api.drivers.ports import BmcAccess
from tests.unit.drydock import designs as D
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import TOKENS
from tests.unit.drydock.test_budget_api import call
from tests.unit.drydock.test_orchestrator import names
from tests.unit.drydock.test_reboot import drive, request

CTX = RequestContext(user="admin")
RACK = Claim("rack:rack01", 1)
# a waiting take_budget_slot step times out after release_timeout: room on a loaded machine
PATIENT = {"maas_poll_interval": 0.001, "step_retry_delay": 0.001, "outage_window": 0,
           "release_timeout": 120.0}


def budgeted_docs() -> list[dict[str, Any]]:
    docs = D.simple_site(["n1", "n2"])
    docs[2]["data"]["failure_domains"] = [{"name": "rack", "by": "rack", "budget": 1}]
    return docs


def create(site: Site, node: str, **fields: Any) -> dict[str, Any]:
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": names(node),
         **fields}, CTX, None)
    return dict(body)


def holders(site: Site) -> list[tuple[str, str, str]]:
    return [(h.holder, h.domain, h.node) for h in site.runtime.budgets.slots.held()]


def node_messages(site: Site, task_id: str, node: str) -> list[dict[str, Any]]:
    task = site.runtime.service.get(task_id)
    return [m for m in task["result"]["details"]["messageList"] if m.get("node") == node]


def test_two_destroys_in_one_rack_never_hold_it_at_once(make_site: SiteFactory) -> None:
    site = make_site(docs=budgeted_docs(), steps=PATIENT)
    seen: list[tuple[str, list[tuple[str, str, str]]]] = []
    power_off = site.oob.power_off

    def watched(bmc: BmcAccess, *, graceful: bool) -> None:
        node = next(n for n in ("n1", "n2") if site.address(n) == bmc.address)
        seen.append((node, holders(site)))
        deadline = time.monotonic() + 4  # within the power-off step's timeout
        while len(seen) == 1 and time.monotonic() < deadline and not any(
                m.get("reason") == "BudgetExhausted"  # the other node tries meanwhile
                for task in (first, second) for m in site.runtime.service.get(
                    task["task_id"])["result"]["details"]["messageList"]):
            time.sleep(0.05)
        power_off(bmc, graceful=graceful)

    site.oob.power_off = watched  # type: ignore[method-assign]
    first, second = create(site, "n1"), create(site, "n2")
    worker = site.runtime.new_worker("w1")
    assert worker.poll_once() == 2  # both run at once in one worker
    worker.join(60)
    for task in (first, second):
        done = site.runtime.service.get(task["task_id"])
        assert done["status"] == "complete" and done["result"]["status"] == "success", \
            done["result"]["details"]["messageList"]
    assert {n for n, _ in seen} == {"n1", "n2"}
    for node, held in seen:  # each power-off: the rack held by that node's task alone
        assert [(d, n) for _, d, n in held] == [("rack:rack01", node)], seen
    waited = [m for task in (first, second) for n in ("n1", "n2")
              for m in node_messages(site, task["task_id"], n)
              if m.get("reason") == "BudgetExhausted"]
    assert len(waited) == 1, waited
    assert "failure domain rack:rack01 has its budget of 1" in waited[0]["message"]
    assert waited[0]["blockers"][0]["holders"][0]["holder"].startswith("drydock:")
    assert holders(site) == []  # given back when each node's work ended


def test_refuse_is_409_naming_the_rack_and_creates_nothing(make_site: SiteFactory) -> None:
    site = make_site(docs=budgeted_docs())
    first = create(site, "n1", budget="refuse")  # its slot is taken at POST
    assert [(d, n) for _, d, n in holders(site)] == [("rack:rack01", "n1")]
    with pytest.raises(Conflict) as refused:
        create(site, "n2", budget="refuse")
    assert refused.value.instance_reason == "BudgetExhausted"
    assert "rack:rack01" in refused.value.message and "(n1" in refused.value.message
    assert refused.value.details["blockers"][0]["domain"] == "rack:rack01"
    tasks = site.runtime.service.list(statuses=[], actions=[], since=None, limit=10,
                                      marker=None)
    assert [t["task_id"] for t in tasks] == [first["task_id"]]
    worker = site.runtime.new_worker("w1")
    assert worker.poll_once() == 1
    worker.join(60)
    assert site.runtime.service.get(first["task_id"])["result"]["status"] == "success"
    assert holders(site) == []


def test_a_task_under_a_held_slot_takes_no_second_one(make_site: SiteFactory) -> None:
    site = make_site(docs=budgeted_docs())
    slots = site.runtime.budgets.slots
    assert slots.take("shipyard:m1:n1", "n1", [RACK], 60) == []
    with pytest.raises(Conflict) as refused:  # the holder does not cover n2
        create(site, "n2", budget_holder="shipyard:m1:n1")
    assert refused.value.instance_reason == "SlotsNotHeld" and "n2" in refused.value.message
    task = create(site, "n1", budget_holder="shipyard:m1:n1")
    worker = site.runtime.new_worker("w1")
    worker.poll_once()
    worker.join(60)
    done = site.runtime.service.get(task["task_id"])
    assert done["result"]["status"] == "success", done
    assert any("acting under shipyard:m1:n1" in m["message"]
               for m in node_messages(site, task["task_id"], "n1"))
    assert holders(site) == [("shipyard:m1:n1", "rack:rack01", "n1")]  # still Shipyard's


def test_reboot_waits_for_its_slot_holds_it_while_off_and_gives_it_back(
        make_site: SiteFactory) -> None:
    site = make_site(docs=budgeted_docs(), clock=FakeClock(),
                     reboot={"soft_timeout": 5.0, "lease_seconds": 30.0})
    slots = site.runtime.budgets.slots
    assert slots.take("other", "n2", [RACK], 600) == []
    request(site, node="n1")
    drive(site, 5)
    view = site.runtime.node_service.reboots(CTX, "n1", site.href)
    assert site.oob.calls[("graceful", site.address("n1"))] == 0  # still in service
    assert "rack:rack01" in str(view) and "other (n2)" in str(view), view
    slots.release("other")
    held_while_off = []
    for _ in range(20):
        site.runtime.reconciler.pass_once()
        assert site.clock is not None
        site.clock.advance(0.1)
        if site.oob.power.get(site.address("n1")) == "off":
            held_while_off.append(holders(site))
    assert held_while_off and all(h == [("drydock:reboot:n1", "rack:rack01", "n1")]
                                  for h in held_while_off), held_while_off
    assert site.oob.power[site.address("n1")] == "on"
    assert site.oob.calls[("power_on", site.address("n1"))] == 1
    assert holders(site) == []  # in service again: given back


def test_renew_prefix_extends_a_tasks_slots_only(make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(docs=budgeted_docs(), clock=clock)
    slots = site.runtime.budgets.slots
    assert slots.take("drydock:k1:n1", "n1", [RACK], 10) == []
    assert slots.take("drydock:k10:n2", "n2", [Claim("rack:rack02", 1)], 10) == []
    clock.advance(8)
    assert slots.renew_prefix("drydock:k1:", 10) == 1
    clock.advance(5)
    assert [h.holder for h in slots.held()] == ["drydock:k1:n1"]


def test_a_deploy_nodes_group_of_one_rack_runs_one_node_at_a_time(
        make_site: SiteFactory) -> None:
    docs = D.simple_site(["n1", "n2", "n3"])
    docs[2]["data"]["failure_domains"] = [{"name": "rack", "by": "rack", "budget": 1}]
    site = make_site(["n1", "n2", "n3"], docs=docs, steps=PATIENT)
    for name in ("n1", "n2", "n3"):
        site.maas._set(f"id-{name}", "Ready")  # prepared, not yet deployed
    seen: list[tuple[str, list[tuple[str, str, str]]]] = []
    deploy = site.maas.deploy

    def watched(system_id: str, *args: Any) -> Any:
        seen.append((system_id.removeprefix("id-"), holders(site)))
        return deploy(system_id, *args)

    site.maas.deploy = watched  # type: ignore[method-assign]
    body, _ = site.runtime.service.create(  # as deploy_site asks for a group
        {"action": "deploy_nodes", "design_ref": site.href,
         "node_filter": names("n1", "n2", "n3")}, CTX, None)
    worker = site.runtime.new_worker("w1")
    worker.poll_once()
    worker.join(60)
    task = site.runtime.service.get(body["task_id"])
    assert task["result"]["status"] == "success", task
    assert sorted(n for n, _ in seen) == ["n1", "n2", "n3"]
    for node, held in seen:  # each deploy request: the rack held by that node alone
        assert [(d, n) for _, d, n in held] == [("rack:rack01", node)], seen
    waits = [m for m in task["result"]["details"]["messageList"]
             if m.get("reason") == "BudgetExhausted"]
    assert all("rack:rack01" in m["message"] and m["node"] != seen[0][0]  # who waited
               for m in waits), waits
    assert holders(site) == []


def test_a_replayed_refuse_request_is_the_same_task_and_busy_nodes_give_slots_back(
        make_site: SiteFactory) -> None:
    site = make_site(docs=budgeted_docs())
    body = {"action": "destroy_nodes", "design_ref": site.href, "node_filter": names("n1"),
            "budget": "refuse"}
    first, created = site.runtime.service.create(dict(body), CTX, "key-1")
    again, created_again = site.runtime.service.create(dict(body), CTX, "key-1")
    assert created and not created_again and again["task_id"] == first["task_id"]
    assert len(holders(site)) == 1  # the replay took nothing
    site.runtime.budgets.slots.release(holders(site)[0][0])  # the rack is free, n1 busy
    with pytest.raises(Conflict) as busy:
        site.runtime.service.create(dict(body), CTX, "key-2")
    assert busy.value.instance_reason == "NodesBusy"
    assert holders(site) == []  # what the refused request took is given back


def test_post_tasks_budget_fields_over_http(make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site(docs=budgeted_docs())
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    c, href = falcon.testing.TestClient(app), site.href
    bad = call(c, "POST", "/tasks", {"action": "power_off_nodes", "design_ref": href,
                                     "node_filter": names("n2"), "budget": "maybe",
                                     "budget_holder": "no spaces allowed"})
    assert bad.status_code == 400, bad.text
    text = str(bad.json["details"]["messageList"])
    assert "budget must be wait or refuse" in text and "budget_holder must match" in text
    held = call(c, "POST", "/budgets/slots", {"holder": "ops-1", "node": "n1",
                                              "design_ref": href})
    assert held.status_code == 200, held.text
    refused = call(c, "POST", "/tasks", {"action": "power_off_nodes", "design_ref": href,
                                         "node_filter": names("n2"), "budget": "refuse"})
    assert refused.status_code == 409 and refused.json["reason"] == "BudgetExhausted"
    assert refused.json["details"]["blockers"][0]["domain"] == "rack:rack01"
    assert "ops-1 (n1)" in refused.json["message"]
    assert call(c, "GET", "/tasks").json == []  # nothing created
