"""A drydock-worker SIGKILLed while a Redfish Drive.SecureErase runs, or while a graceful
shutdown is pending: the worker that takes the task over follows what was asked, and the
emulator receives one SecureErase per disk and one graceful shutdown. A task that failed
after erasing, run again, erases nothing again and says which task erased each disk."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from sitesim.site import Site
from tests.integration.drydock.conftest import Env, drydock_sections
from tests.support.procs import Proc, wait_until
from tests.support.services import ServiceProcess, worker_process, write_conf, write_tokens

pytestmark = pytest.mark.slow


def calls(env: Env, op: str, node: str) -> int:
    return int(env.sim("/calls", system="redfish", op=op, node=node)["count"])


def disks(site: Site, node: str) -> list[str]:
    return [d.name for d in next(n for n in site.spec.nodes if n.name == node).disks]


@pytest.fixture
def crash_env(dd_site: Site, tmp_path: Path) -> Iterator[Env]:
    """An API process and no worker: each test starts (and kills) its own workers."""
    tokens = write_tokens(tmp_path / "tokens.yaml")
    (tmp_path / "design.yaml").write_text(dd_site.design_yaml())
    sections = drydock_sections(dd_site, tmp_path,
                                worker={"threads": 0, "lease_seconds": 1.0},
                                steps={"step_retries": 2, "step_retry_delay": 0.2})
    api = ServiceProcess("drydock", tmp_path, sections)
    write_conf(tmp_path / "drydock.conf", sections)
    try:
        yield Env(dd_site, api.url, tokens["admin"], f"file://{tmp_path}/design.yaml", tmp_path)
    finally:
        api.stop()
        time.sleep(0.1)


def start_worker(env: Env, name: str) -> Proc:
    return worker_process("drydock", env.work / "drydock.conf", env.work / f"{name}.log",
                          env.work)


def node_view(env: Env, name: str) -> dict[str, object]:
    resp = requests.get(f"{env.url}/api/v1.0/nodes/{name}", headers=env.headers, timeout=30)
    assert resp.status_code == 200, resp.text
    body: dict[str, object] = resp.json()
    return body


def kill_and_take_over(env: Env, first: Proc, task_id: str) -> tuple[Proc, dict[str, object]]:
    first.kill(signal.SIGKILL)
    assert env.task(task_id)["status"] == "running"
    second = start_worker(env, "worker-2")
    return second, env.wait(task_id)


def test_a_secure_erase_running_when_its_worker_is_killed_is_sent_once_per_disk(
        crash_env: Env, dd_site: Site) -> None:
    env, node = crash_env, "rf-a"
    env.fault(node, "bmc.erase", "hang")  # the BMC tasks stay Running until cleared
    first, second = start_worker(env, "worker-1"), None
    try:
        task_id = env.post_task([node]).json()["task_id"]
        wait_until(lambda: calls(env, "secure_erase", node) == len(disks(dd_site, node)),
                   timeout=120, what="every Drive.SecureErase of the first worker")
        first.kill(signal.SIGKILL)
        second = start_worker(env, "worker-2")
        wait_until(lambda: f"Resuming task {task_id}" in second.output(), timeout=120,
                   what="the second worker to take the task over")
        time.sleep(0.5)  # it polls the BMC tasks still running
        env.clear_faults()
        task = env.wait(task_id)
    finally:
        env.clear_faults()
        first.stop()
        if second is not None:
            second.stop()
    assert task["result"]["status"] == "success", task["result"]
    assert {d: calls(env, f"secure_erase:{d}", node) for d in disks(dd_site, node)} == {
        d: 1 for d in disks(dd_site, node)}
    assert calls(env, "graceful_shutdown", node) == 1
    assert all(d["wiped_by"] == "redfish Drive.SecureErase"
               for d in env.sim(f"/nodes/{node}")["disks"].values()), env.sim(f"/nodes/{node}")
    assert node_view(env, node)["teardown"]["state"] == "complete"  # type: ignore[index]


def test_a_graceful_shutdown_pending_when_its_worker_is_killed_is_asked_once(
        crash_env: Env, dd_site: Site) -> None:
    env, node = crash_env, "rf-h"  # its OS ignores a graceful shutdown: ForceOff follows
    first, second = start_worker(env, "worker-1"), None
    try:
        task_id = env.post_task([node]).json()["task_id"]
        wait_until(lambda: calls(env, "graceful_shutdown", node) == 1, timeout=120,
                   what="the graceful shutdown request")
        second, task = kill_and_take_over(env, first, task_id)
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert task["result"]["status"] == "success", task["result"]
    assert calls(env, "graceful_shutdown", node) == 1
    assert calls(env, "power_off", node) == 1  # one ForceOff, after graceful_timeout
    assert {d: calls(env, f"secure_erase:{d}", node) for d in disks(dd_site, node)} == {
        d: 1 for d in disks(dd_site, node)}
    assert env.sim(f"/nodes/{node}")["power"] == "off"


def test_a_rerun_of_a_failed_destroy_does_not_erase_again_what_the_first_erased(
        crash_env: Env, dd_site: Site) -> None:
    env, node = crash_env, "rf-b"
    env.fault(node, "maas.release", "fail")  # fails the task after the disks are erased
    worker = start_worker(env, "worker-1")
    try:
        first = env.wait(env.post_task([node]).json()["task_id"])
        assert first["result"]["status"] == "failure"
        teardown = node_view(env, node)["teardown"]
        assert isinstance(teardown, dict) and teardown["state"] == "partial"
        assert teardown["last_step"] == "wipe_disks" and teardown["task"] == first["task_id"]
        assert "Failed releasing" in teardown["cause"]
        assert sorted(teardown["erased"]) == sorted(disks(dd_site, node))
        env.clear_faults()
        second = env.wait(env.post_task([node]).json()["task_id"])
    finally:
        env.clear_faults()
        worker.stop()
    assert second["result"]["status"] == "success", second["result"]
    assert {d: calls(env, f"secure_erase:{d}", node) for d in disks(dd_site, node)} == {
        d: 1 for d in disks(dd_site, node)}
    assert calls(env, "graceful_shutdown", node) == 1
    rows = [m for m in second["result"]["details"]["messageList"]
            if m.get("step") == "report_disks" and "disk" in m]
    assert sorted(r["disk"] for r in rows) == sorted(disks(dd_site, node))
    assert all(r["verified_by"].startswith(f"erased earlier by task {first['task_id']}")
               for r in rows), rows
    assert node_view(env, node)["teardown"]["state"] == "complete"  # type: ignore[index]


def maas_up(env: Env, up: bool) -> None:
    resp = requests.put(f"{env.site.urls['sitesim']}/maas", json={"up": up}, timeout=10)
    assert resp.status_code == 200, resp.text


OUTAGE_WINDOW = 1.5  # seconds transient MAAS failures are retried (steps.outage_window)


@pytest.fixture
def outage_env(dd_site: Site, tmp_path: Path) -> Iterator[Env]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    (tmp_path / "design.yaml").write_text(dd_site.design_yaml())
    sections = drydock_sections(dd_site, tmp_path, steps={
        "step_retries": 0, "step_retry_delay": 0.2, "outage_window": OUTAGE_WINDOW})
    api = ServiceProcess("drydock", tmp_path, sections)
    try:
        yield Env(dd_site, api.url, tokens["admin"], f"file://{tmp_path}/design.yaml", tmp_path)
    finally:
        maas_up(Env(dd_site, api.url, "", "", tmp_path), True)
        api.stop()


def test_maas_down_twice_the_outage_window_leaves_a_partial_teardown_a_rerun_resumes(
        outage_env: Env, dd_site: Site) -> None:
    env, node = outage_env, "rf-c"
    env.fault(node, "bmc.erase", "hang")  # hold the erase until MAAS is down
    try:
        first_id = env.post_task([node]).json()["task_id"]
        wait_until(lambda: calls(env, "secure_erase", node) == len(disks(dd_site, node)),
                   timeout=120, what="the BMC erases")
        maas_up(env, False)
        down_at = time.monotonic()
        env.clear_faults()  # the erases end; release finds MAAS down
        first = env.wait(first_id)
        time.sleep(max(0.0, down_at + 2 * OUTAGE_WINDOW - time.monotonic()))
    finally:
        env.clear_faults()
        maas_up(env, True)
    assert first["result"]["status"] == "failure"
    teardown = node_view(env, node)["teardown"]
    assert isinstance(teardown, dict), teardown
    assert teardown["state"] == "partial" and teardown["task"] == first_id
    assert teardown["last_step"] == "wipe_disks"
    assert teardown["steps_done"] == ["plan_wipe", "power_off", "wipe_disks"]
    assert teardown["cause"].startswith("release: MAAS") and "503" in teardown["cause"]
    assert env.releases(node) == 0 and env.sim(f"/nodes/{node}")["maas_status"] == "Deployed"
    second = env.wait(env.post_task([node]).json()["task_id"], timeout=60)
    assert second["result"]["status"] == "success", second["result"]
    assert env.releases(node) == 1 and env.sim(f"/nodes/{node}")["maas_status"] is None
    assert calls(env, "graceful_shutdown", node) == 1
    assert {d: calls(env, f"secure_erase:{d}", node) for d in disks(dd_site, node)} == {
        d: 1 for d in disks(dd_site, node)}
    done_earlier = [m for m in second["result"]["details"]["messageList"]
                    if m.get("step") == "plan_wipe" and m.get("earlier_task") == first_id]
    assert done_earlier, "the plan of the first task stands"
    assert node_view(env, node)["teardown"]["state"] == "complete"  # type: ignore[index]


def test_the_redfish_driver_finds_an_erase_at_the_bmc_by_its_drive(
        dd_env: Env, dd_site: Site) -> None:
    """What a worker that died before saving a SecureErase's answer relies on: the BMC's
    TaskService names the task by the action it ran, and the drive shows it running."""
    from drydock_api.drivers.ports import BmcAccess
    from drydock_api.drivers.redfish.driver import RedfishDriver

    node = "rf-m"
    info = dd_env.sim(f"/nodes/{node}")["bmc"]
    spec = next(n for n in dd_site.spec.nodes if n.name == node)
    bmc = BmcAccess("redfish", "127.0.0.1", int(info["port"]), spec.bmc.user,
                    spec.bmc.password, system_id=info["system_id"])
    driver = RedfishDriver(timeout=5)
    drives = driver.erasable_drives(bmc)
    first, other = sorted(drives)[:2]
    assert driver.find_erase(bmc, drives[first]) is None
    dd_env.fault(node, "bmc.erase", "hang")
    try:
        task = driver.secure_erase(bmc, drives[first])
        assert driver.find_erase(bmc, drives[first]) == task  # running: the drive says so
        assert driver.find_erase(bmc, drives[other]) is None
    finally:
        dd_env.clear_faults()
    wait_until(lambda: driver.erase_status(bmc, task).state == "completed", timeout=60,
               what="the erase to end")
    assert driver.find_erase(bmc, drives[first]) == task  # done: the TaskService says so
    assert calls(dd_env, f"secure_erase:{first}", node) == 1


def test_a_hung_power_off_fails_its_lone_node_as_stuck_and_nothing_follows(
        dd_site: Site, tmp_path: Path) -> None:
    """The BMC takes the power-off request and never answers; its request timeout (60 s) is
    far off. With `[steps] attempt_timeout` at 2 s the node fails as StepStuck although it is
    the task's only node (nothing else ends or comes due to wake the task's loop); when the
    BMC answers late, nothing more is asked of it (no erase)."""
    tokens = write_tokens(tmp_path / "tokens.yaml")
    (tmp_path / "design.yaml").write_text(dd_site.design_yaml())
    sections = drydock_sections(dd_site, tmp_path, steps={"attempt_timeout": 2.0},
                                oob={"request_timeout": 60.0})
    api = ServiceProcess("drydock", tmp_path, sections)
    env, node = Env(dd_site, api.url, tokens["admin"], f"file://{tmp_path}/design.yaml",
                    tmp_path), "rf-d"
    try:
        env.fault(node, "bmc.power", "hang")
        task = env.wait(env.post_task([node]).json()["task_id"], timeout=50)
        env.clear_faults()  # the hung request is answered now, late, and carried out
        wait_until(lambda: env.sim(f"/nodes/{node}")["power"] == "off", timeout=30,
                   what="the late power-off")
        time.sleep(1.0)  # time for a late attempt that went on to reach the erase
        after = env.task(task["task_id"])
    finally:
        env.clear_faults()
        api.stop()
    assert task["result"]["status"] == "failure", task["result"]
    stuck = [m["message"] for m in task["result"]["details"]["messageList"]
             if "attempt timeout" in m["message"]]
    assert stuck and f"power_off on {node}: an attempt has run" in stuck[0], stuck
    assert after["result"]["status"] == "failure"  # the late answer is not heard
    assert sum(calls(env, f"secure_erase:{d}", node) for d in disks(dd_site, node)) == 0
