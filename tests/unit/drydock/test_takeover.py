"""A worker that dies mid-task: another takes over after the lease and repeats no step."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from common.context import RequestContext
from drydock_api.drivers.ports import Machine
from tests.unit.drydock.conftest import FakeClock, SiteFactory


class Crash(BaseException):
    """Stands for the process dying: escapes every `except Exception`."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_takeover_after_lease_expiry_never_repeats_a_completed_step(make_site: SiteFactory):
    clock = FakeClock()
    site = make_site(["n1", "n2"], clock=clock)
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}},
        RequestContext(), None)
    original_delete = site.maas.delete_machine
    crashed = threading.Event()

    def dying_delete(system_id: str) -> None:
        crashed.set()
        raise Crash()

    site.maas.delete_machine = dying_delete  # type: ignore[method-assign]
    first = site.runtime.new_worker("first")
    assert first.poll_once() == 1
    first.join(30)
    assert crashed.is_set()
    row = site.runtime.store.get(body["task_id"])
    assert row.status == "running" and row.lease_owner == "first"
    second = site.runtime.new_worker("second")
    assert second.poll_once() == 0
    site.maas.delete_machine = original_delete  # type: ignore[method-assign]
    clock.advance(site.runtime.worker_settings.lease_seconds + 1)
    assert second.poll_once() == 1
    second.join(30)
    task = site.runtime.service.get(body["task_id"])
    assert task["status"] == "complete" and task["result"]["status"] == "success"
    assert site.maas.calls[("release", "n1")] == 1 and site.maas.calls[("release", "n2")] == 1
    assert all(site.oob.calls[("graceful", site.address(n))] == 1 for n in ("n1", "n2"))
    assert site.maas.machines == {}


def test_release_in_progress_after_a_crash_is_waited_for_not_repeated(make_site: SiteFactory):
    site = make_site(["n1"])
    site.maas.machines["id-n1"] = Machine("id-n1", "n1", "Disk erasing", "off")
    statuses = iter(["Disk erasing", "Disk erasing", "Ready"])
    original = site.maas.find_machine

    def find(hostname: str) -> Any:
        machine = original(hostname)
        if machine is None:
            return None
        return Machine(machine.system_id, hostname, next(statuses, "Ready"), "off")

    site.maas.find_machine = find  # type: ignore[method-assign]
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}},
        RequestContext(), None)
    worker = site.runtime.new_worker("w")
    worker.poll_once()
    worker.join(30)
    assert site.runtime.service.get(body["task_id"])["result"]["status"] == "success"
    assert site.maas.calls[("release", "n1")] == 0


def test_terminate_stops_before_the_next_node_step(make_site: SiteFactory):
    site = make_site(["n1"])
    gate, entered = threading.Event(), threading.Event()
    original = site.oob.power_state

    def slow_power_state(bmc: Any) -> str:
        entered.set()
        gate.wait(10)
        return original(bmc)

    site.oob.power_state = slow_power_state  # type: ignore[method-assign]
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}},
        RequestContext(), None)
    worker = site.runtime.new_worker("w")
    worker.poll_once()
    assert entered.wait(10)
    assert site.runtime.service.terminate(body["task_id"], "admin")["status"] == "terminating"
    gate.set()
    worker.join(30)
    task = site.runtime.service.get(body["task_id"], layers=-1)[body["task_id"]]
    assert task["status"] == "terminated"
    assert ("release", "n1") not in site.maas.calls and "id-n1" in site.maas.machines


def test_a_renewed_lease_is_never_taken_over(make_site: SiteFactory):
    site = make_site(["n1"], worker={"lease_seconds": 1.0, "poll_interval": 0.01},
                     oob={"graceful_timeout": 1.0, "poll_interval": 0.01, "power_timeout": 5.0})
    original = site.oob.power_state

    def slow_power_state(bmc: Any) -> str:
        time.sleep(0.05)
        return original(bmc)

    site.oob.power_state = slow_power_state  # type: ignore[method-assign]
    site.oob.ignore_graceful.add(site.address("n1"))
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}},
        RequestContext(), None)
    owner = site.runtime.new_worker("owner")
    runner = threading.Thread(target=owner.run, daemon=True)
    runner.start()
    rival = site.runtime.new_worker("rival")
    deadline = time.monotonic() + 30
    while site.runtime.store.get(body["task_id"]).lease_owner != "owner":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        while site.runtime.store.get(body["task_id"]).status not in ("complete", "terminated"):
            assert rival.poll_once() == 0
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        owner.stopping.set()
        runner.join(5)
    assert site.oob.calls[("graceful", site.address("n1"))] == 1


def test_several_top_level_tasks_run_at_once(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    both_running = threading.Barrier(2, timeout=10)
    original = site.oob.power_state
    seen: set[str] = set()

    def meet_then_answer(bmc: Any) -> str:
        if bmc.address not in seen:
            seen.add(bmc.address)
            both_running.wait()
        return original(bmc)

    site.oob.power_state = meet_then_answer  # type: ignore[method-assign]
    ids = [site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href,
         "node_filter": {"filter_set": [{"node_names": [n]}]}}, RequestContext(), None)[0]
        ["task_id"] for n in ("n1", "n2")]
    worker = site.runtime.new_worker("w")
    assert worker.poll_once() == 2
    worker.join(30)
    assert [site.runtime.service.get(i)["result"]["status"] for i in ids] == ["success"] * 2


def test_a_worker_whose_lease_lapsed_does_not_run_its_own_task_twice(make_site: SiteFactory):
    """A loaded machine delays the heartbeat past the lease: the worker's next poll finds its
    own task claimable, takes the lease back and leaves the task to the thread running it."""
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, steps={"release_timeout": 600.0})
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}},
        RequestContext(), None)
    entered, go_on = threading.Event(), threading.Event()
    original = site.maas.release

    def slow_release(system_id: str, erase: str | None) -> Any:
        entered.set()
        assert go_on.wait(30)
        return original(system_id, erase)

    site.maas.release = slow_release  # type: ignore[method-assign]
    worker = site.runtime.new_worker("w")
    assert worker.poll_once() == 1
    assert entered.wait(30)
    clock.advance(site.runtime.worker_settings.lease_seconds + 1)  # no heartbeat meanwhile
    assert worker.poll_once() == 0  # nothing new to run
    assert worker.active() == [body["task_id"]]
    row = site.runtime.store.get(body["task_id"])
    assert row.lease_owner == "w" and row.lease_expires is not None
    assert row.lease_expires > clock()  # the lease is held again
    go_on.set()
    worker.join(30)
    task = site.runtime.service.get(body["task_id"])
    errors = [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert task["result"]["status"] == "success", errors
    assert site.maas.calls[("release", "n1")] == 1
