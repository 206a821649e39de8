"""A Drydock task whose worker died after its node took its failure-domain slots, and whose
slots lapsed with it, takes them again before the node's next out-of-service effect: while
another holder has the domain now the node waits (a message naming the domain and that
holder), nothing asked of its BMC; with budget=refuse the node fails, untouched."""

from __future__ import annotations

from typing import Any

import pytest

from drydock_api.budgets.slots import Claim
from drydock_api.drivers.ports import BmcAccess
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory
from tests.unit.drydock.test_takeover_effects import crash_once, run
from tests.unit.drydock.test_task_budgets import budgeted_docs, create, holders, node_messages

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")

RACK = Claim("rack:rack01", 1)
OTHER = "shipyard:other:n2"


def died_in_power_off(site: Site, clock: FakeClock, **fields: Any) -> str:
    """A destroy of n1 whose worker took the rack's slot, then died in the power-off step
    before asking the BMC anything; the task's lease and the slot's lease both ran out and
    another holder took the rack meanwhile."""
    crash_once(site.oob, "power_state", lambda: True)
    task_id = str(create(site, "n1", **fields)["task_id"])
    run(site, "first")
    assert site.runtime.store.get(task_id).status == "running"
    assert [h[2] for h in holders(site)] == ["n1"]
    clock.advance(max(site.runtime.worker_settings.lease_seconds,
                      site.runtime.service.budgets.lease) + 1)
    assert holders(site) == []  # lapsed with its worker
    assert site.runtime.budgets.slots.take(OTHER, "n2", [RACK], 3600) == []
    return task_id


def test_a_taken_over_task_waits_for_its_lapsed_slot_before_powering_off(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1", "n2"], docs=budgeted_docs(), clock=clock,
                     steps={"release_timeout": 600.0}, oob={"power_timeout": 600.0})
    asked: list[list[tuple[str, str, str]]] = []
    power_off = site.oob.power_off

    def watched(bmc: BmcAccess, *, graceful: bool) -> None:
        asked.append(holders(site))
        power_off(bmc, graceful=graceful)

    site.oob.power_off = watched  # type: ignore[method-assign]
    seen_waiting: list[dict[str, Any]] = []
    take = site.runtime.budgets.slots.take

    def taking(holder: str, *args: Any, **kwargs: Any) -> Any:
        blockers = take(holder, *args, **kwargs)
        if blockers and holder.startswith("drydock:"):  # the taken-over node waits ...
            seen_waiting.append({"holder": holder, "asked": len(asked)})
            if len(seen_waiting) == 3:  # ... until the other holder gives the rack back
                site.runtime.budgets.slots.release(OTHER)
        return blockers

    site.runtime.budgets.slots.take = taking  # type: ignore[method-assign]
    task_id = died_in_power_off(site, clock)
    run(site, "second")
    task = site.runtime.service.get(task_id)
    assert task["result"]["status"] == "success", task["result"]["details"]["messageList"]
    assert len(seen_waiting) >= 3 and all(w["asked"] == 0 for w in seen_waiting), seen_waiting
    assert asked and all([(d, n) for h, d, n in held] == [("rack:rack01", "n1")]
                         and held[0][0].startswith("drydock:") for held in asked), asked
    waits = [m for m in node_messages(site, task_id, "n1")
             if m.get("reason") == "BudgetExhausted"]
    assert waits and OTHER in waits[0]["message"] and "rack:rack01" in waits[0]["message"]
    assert waits[0]["blockers"][0]["holders"][0]["holder"] == OTHER
    assert any("taken again after a takeover" in m["message"]
               for m in node_messages(site, task_id, "n1"))
    assert holders(site) == []  # given back when the node's work ended


def test_a_taken_over_refusing_task_fails_the_node_untouched(make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1", "n2"], docs=budgeted_docs(), clock=clock)
    task_id = died_in_power_off(site, clock, budget="refuse")
    run(site, "second")
    task = site.runtime.service.get(task_id)
    assert task["result"]["status"] == "failure"
    bmc = site.address("n1")
    assert site.oob.calls[("graceful", bmc)] == 0 and site.oob.calls[("force_off", bmc)] == 0
    failed = [m for m in node_messages(site, task_id, "n1") if m["error"]]
    assert failed and OTHER in failed[0]["message"], failed
    assert "after a takeover (its slots lapsed)" in failed[0]["message"]
    assert [h[0] for h in holders(site)] == [OTHER]


def test_a_taken_over_task_waits_for_its_slot_no_longer_than_release_timeout(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1", "n2"], docs=budgeted_docs(), clock=clock,
                     steps={"release_timeout": 10.0})
    task_id = died_in_power_off(site, clock)
    run(site, "second")  # the other holder keeps the rack
    task = site.runtime.service.get(task_id)
    assert task["result"]["status"] == "failure"
    bmc = site.address("n1")
    assert site.oob.calls[("graceful", bmc)] == 0 and site.oob.calls[("force_off", bmc)] == 0
    failed = [m for m in node_messages(site, task_id, "n1") if m["error"]]
    assert failed and "waited 10 s after a takeover" in failed[0]["message"], failed
    assert OTHER in failed[0]["message"]
