"""Node steps run one attempt at a time: a waiting node holds no pool thread, and its retry
is saved with the step, so a worker taking the task over resumes the step where it was."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from common.context import RequestContext
from drydock_api.drivers.ports import MaasError, Machine
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory


class Crash(BaseException):
    """Stands for the process dying: escapes every `except Exception`."""


def destroy_all(site: Site) -> str:
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}}, RequestContext(), None)
    return str(body["task_id"])


def node_status(site: Site, task_id: str, node: str) -> str | None:
    """The status of the node's subtask (None before the worker made it)."""
    tree = site.runtime.service.get(task_id, layers=-1)
    return next((str(t["status"]) for t in tree.values()
                 if isinstance(t, dict) and t["node"] == node and t["step"] is None), None)


def test_a_waiting_node_holds_no_pool_thread(make_site: SiteFactory):
    site = make_site(["n1", "n2"], worker={"node_pool_size": 1, "lease_seconds": 5.0,
                                           "poll_interval": 0.01})
    erased = threading.Event()
    original = site.maas.find_machine

    def find(hostname: str) -> Any:
        machine = original(hostname)
        if machine is None or hostname != "n1" or erased.is_set():
            return machine
        return Machine(machine.system_id, hostname, "Disk erasing", "off")

    site.maas.find_machine = find  # type: ignore[method-assign]
    task_id = destroy_all(site)
    worker = site.runtime.new_worker("w")
    assert worker.poll_once() == 1
    deadline = time.monotonic() + 30
    # n1 keeps erasing: with the pool's one thread held by it, n2 would never run
    while node_status(site, task_id, "n2") != "complete":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert node_status(site, task_id, "n1") == "running"
    erased.set()
    worker.join(30)
    task = site.runtime.service.get(task_id)
    assert task["status"] == "complete" and task["result"]["status"] == "success"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_taking_over_resumes_the_step_with_its_saved_retries(make_site: SiteFactory):
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, steps={"step_retries": 3, "outage_window": 0,
                                                 "step_retry_delay": 0.5})
    calls: list[str] = []
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]  # the plan needs nothing of MAAS

    def failing_find(hostname: str) -> Any:
        calls.append(hostname)
        if len(calls) == 3:
            raise Crash()  # the first worker dies during its third attempt
        raise MaasError("MAAS answered 503", transient=True)

    site.maas.find_machine = failing_find  # type: ignore[method-assign]
    task_id = destroy_all(site)
    first = site.runtime.new_worker("first")
    assert first.poll_once() == 1
    first.join(30)
    step = next(t for t in site.runtime.service.get(task_id, layers=-1).values()
                if isinstance(t, dict) and t["step"] == "release")
    saved = site.runtime.progress.saved_retry(site.runtime.store.get(step["task_id"]))
    assert saved is not None and saved["failures"] == 2 and saved["attempts"] == 2
    calls.clear()
    clock.advance(site.runtime.worker_settings.lease_seconds + 1)
    second = site.runtime.new_worker("second")
    assert second.poll_once() == 1
    second.join(30)
    # two more failures make four: the policy's three retries are used up
    assert calls == ["n1", "n1"]
    task = site.runtime.service.get(task_id, layers=-1)
    assert task[task_id]["result"]["status"] == "failure"
    messages = [m["message"] for m in task[step["task_id"]]["result"]["details"]["messageList"]]
    assert any("release: MAAS answered 503 (4 tries" in m for m in messages)
