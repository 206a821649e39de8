"""A destroy step's progress survives its worker and its task: after a takeover or a re-run,
no graceful shutdown, Drive.SecureErase or release is asked of a BMC or MAAS a second time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from common.context import RequestContext
from drydock_api.drivers.ports import MaasError
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/takeover.db"
    return str(request.getfixturevalue("postgres_url"))


class Crash(BaseException):
    """Stands for the worker process dying: escapes every `except Exception`."""


def create(site: Site, **options: Any) -> str:
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True, **options}}, RequestContext(user="admin"), None)
    return str(body["task_id"])


def run(site: Site, name: str) -> None:
    worker = site.runtime.new_worker(name)
    assert worker.poll_once() == 1
    worker.join(30)


def crash_once(obj: Any, method: str, when: Callable[[], bool]) -> None:
    """`obj.method` dies (Crash) the first time it is called while `when()` holds."""
    original = getattr(obj, method)
    fired: list[bool] = []

    def dying(*args: Any, **kwargs: Any) -> Any:
        if not fired and when():
            fired.append(True)
            raise Crash()
        return original(*args, **kwargs)

    setattr(obj, method, dying)


def take_over(site: Site, clock: FakeClock, task_id: str) -> dict[str, Any]:
    assert site.runtime.store.get(task_id).status == "running"
    clock.advance(site.runtime.worker_settings.lease_seconds + 1)
    run(site, "second")
    return site.runtime.service.get(task_id)


def disk_rows(task: dict[str, Any], node: str) -> dict[str, dict[str, Any]]:
    return {m["disk"]: m for m in task["result"]["details"]["messageList"]
            if m.get("node") == node and m.get("step") == "report_disks" and "disk" in m}


def test_a_pending_graceful_shutdown_is_not_asked_again_after_a_takeover(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, oob={"graceful_timeout": 20.0, "poll_interval": 1.0,
                                               "power_timeout": 600.0})
    bmc = site.address("n1")
    site.oob.ignore_graceful.add(bmc)  # the OS never shuts down: ForceOff after the timeout
    asked_at: list[float] = []
    original = site.oob.power_off

    def power_off(b: Any, *, graceful: bool) -> None:
        asked_at.append(clock())
        original(b, graceful=graceful)

    site.oob.power_off = power_off  # type: ignore[method-assign]
    crash_once(site.oob, "power_state",
               lambda: site.oob.calls[("graceful", bmc)] == 1)  # dies while it waits
    task_id = create(site)
    run(site, "first")
    task = take_over(site, clock, task_id)
    assert task["result"]["status"] == "success", [
        m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert site.oob.calls[("graceful", bmc)] == 1
    assert site.oob.calls[("force_off", bmc)] == 1
    # ForceOff waited for graceful_timeout counted from the one graceful request
    assert asked_at[1] - asked_at[0] >= 20.0
    assert any("forced off after the graceful shutdown timed out" in m["message"]
               for m in task["result"]["details"]["messageList"])


def test_a_running_secure_erase_is_followed_not_sent_again_after_a_takeover(
        make_site: SiteFactory, db_url: str) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, url=db_url, steps={"release_timeout": 600.0})
    bmc = site.address("n1")
    site.oob.drives[bmc] = ["sda", "sdb"]
    site.oob.erase_polls = 3
    crash_once(site.oob, "erase_status", lambda: True)  # dies while the BMC erases
    task_id = create(site)
    run(site, "first")
    assert site.oob.calls[("erase", bmc)] == 2
    task = take_over(site, clock, task_id)
    assert task["result"]["status"] == "success", [
        m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert site.oob.calls[("erase", bmc)] == 2  # one Drive.SecureErase per disk in all
    assert sorted(t[1] for t in site.oob.tasks.values()) == ["sda", "sdb"]
    assert sorted(site.oob.erased[bmc]) == ["sda", "sdb"]


def test_an_erase_sent_by_a_worker_that_died_before_saving_the_answer_is_found_at_the_bmc(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, steps={"release_timeout": 600.0})
    bmc = site.address("n1")
    site.oob.drives[bmc] = ["sda", "sdb"]
    site.oob.erase_polls = 2
    original = site.oob.secure_erase

    def erase_then_die(b: Any, drive: str) -> str:
        task = original(b, drive)
        if drive.endswith("sdb"):
            raise Crash()  # the BMC accepted it; the worker never saw the answer
        return task

    site.oob.secure_erase = erase_then_die  # type: ignore[method-assign]
    task_id = create(site)
    run(site, "first")
    site.oob.secure_erase = original  # type: ignore[method-assign]
    task = take_over(site, clock, task_id)
    assert task["result"]["status"] == "success", [
        m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert site.oob.calls[("erase", bmc)] == 2 and len(site.oob.tasks) == 2
    assert site.oob.calls[("find_erase", bmc)] == 1


def test_a_rerun_after_a_failed_task_does_not_erase_a_disk_erased_by_the_first(
        make_site: SiteFactory, db_url: str) -> None:
    site = make_site(["n1"], url=db_url)
    bmc = site.address("n1")
    site.oob.drives[bmc] = ["sda", "sdb"]
    site.oob.erase_fails.add("sdb")
    first = create(site)
    run(site, "w1")
    assert site.runtime.service.get(first)["result"]["status"] == "failure"
    record = site.runtime.store.node_record("n1")
    assert record is not None and record.teardown["state"] == "partial"
    assert set(record.teardown["erased"]) == {"sda"}
    site.oob.erase_fails.clear()
    second = create(site)
    run(site, "w2")
    task = site.runtime.service.get(second)
    assert task["result"]["status"] == "success", [
        m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    erases = sorted(t[1] for t in site.oob.tasks.values())
    assert erases == ["sda", "sdb", "sdb"]  # sda once, sdb again (its erase had failed)
    rows = disk_rows(task, "n1")
    assert rows["sda"]["verified_by"].startswith(f"erased earlier by task {first}")
    assert not rows["sdb"]["verified_by"].startswith("erased earlier")
    assert site.runtime.store.node_record("n1").teardown["state"] == "complete"


def test_maas_down_past_the_outage_window_leaves_a_partial_teardown_a_rerun_resumes(
        make_site: SiteFactory) -> None:
    site = make_site(["n1"])
    bmc = site.address("n1")
    original = site.maas.release

    def down(system_id: str, erase: str | None) -> Any:
        raise MaasError("MAAS did not answer", transient=True)

    site.maas.release = down  # type: ignore[method-assign]
    first = create(site)
    run(site, "w1")
    assert site.runtime.service.get(first)["result"]["status"] == "failure"
    teardown = site.runtime.store.node_record("n1").teardown
    assert teardown["state"] == "partial" and teardown["last_step"] == "wipe_disks"
    assert teardown["task"] == first and "release" in teardown["cause"]
    assert "MAAS did not answer" in teardown["cause"]
    site.maas.release = original  # type: ignore[method-assign]
    second = create(site)
    run(site, "w2")
    task = site.runtime.service.get(second)
    assert task["result"]["status"] == "success", [
        m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert site.oob.calls[("graceful", bmc)] == 1 and site.maas.calls[("release", "n1")] == 1
    earlier = [m for m in task["result"]["details"]["messageList"]
               if m.get("step") == "plan_wipe" and m.get("earlier_task") == first]
    assert earlier, "the plan of the first task stands"
    assert site.runtime.store.node_record("n1").teardown["state"] == "complete"


def test_disks_erased_since_the_last_deploy_are_not_erased_again_until_the_next_deploy(
        make_site: SiteFactory) -> None:
    site = make_site(["n1"])
    bmc = site.address("n1")
    site.oob.drives[bmc] = ["sda", "sdb"]
    first = create(site)
    run(site, "w1")
    assert site.runtime.service.get(first)["result"]["status"] == "success"
    site.oob.power[bmc] = "on"
    again = create(site)  # no deploy since: the disks hold nothing new
    run(site, "w2")
    task = site.runtime.service.get(again)
    assert task["result"]["status"] == "success", task["result"]["message"]
    assert len(site.oob.tasks) == 2
    assert all(r["verified_by"].startswith(f"erased earlier by task {first}")
               for r in disk_rows(task, "n1").values())
    site.maas.add("n1", "Ready")
    body, _ = site.runtime.service.create(
        {"action": "deploy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {}}, RequestContext(user="admin"), None)
    run(site, "w3")
    assert site.runtime.service.get(body["task_id"])["result"]["status"] == "success"
    assert site.runtime.store.node_record("n1").teardown is None  # a new life
    third = create(site)
    run(site, "w4")
    assert site.runtime.service.get(third)["result"]["status"] == "success"
    assert sorted(t[1] for t in site.oob.tasks.values()) == ["sda", "sda", "sdb", "sdb"]


def test_a_release_whose_answer_died_with_its_worker_is_not_sent_again(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, steps={"release_timeout": 600.0})
    original = site.maas.release

    def release_then_die(system_id: str, erase: str | None) -> Any:
        original(system_id, erase)
        raise Crash()  # MAAS accepted the release; the worker never saw the answer

    site.maas.release = release_then_die  # type: ignore[method-assign]
    task_id = create(site)
    run(site, "first")
    site.maas.release = original  # type: ignore[method-assign]
    task = take_over(site, clock, task_id)
    assert task["result"]["status"] == "success", task["result"]["message"]
    assert site.maas.calls[("release", "n1")] == 1
    assert site.maas.erase_modes == {"n1": "secure"}
    rows = disk_rows(task, "n1")
    assert all(r["verified_by"].startswith("MAAS finished the secure erase")
               for r in rows.values()), rows


class _DiesWhenRead:
    """MAAS's answer to a release, read by a worker that dies before it saves what it saw."""

    @property
    def status_name(self) -> str:
        raise Crash()


def test_a_release_accepted_before_its_worker_died_is_not_sent_again(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock, steps={"release_timeout": 600.0})
    original = site.maas.release

    def release_then_die(system_id: str, erase: str | None) -> Any:
        original(system_id, erase)
        return _DiesWhenRead()  # accepted and saved; the worker dies reading the answer

    site.maas.release = release_then_die  # type: ignore[method-assign]
    task_id = create(site)
    run(site, "first")
    site.maas.release = original  # type: ignore[method-assign]
    task = take_over(site, clock, task_id)  # the machine reads Ready by now
    assert task["result"]["status"] == "success", task["result"]["message"]
    assert site.maas.calls[("release", "n1")] == 1
    assert site.maas.calls[("allocate", "n1")] == 0
    assert site.maas.erase_modes == {"n1": "secure"}
