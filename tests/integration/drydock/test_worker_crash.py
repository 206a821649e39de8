"""A drydock-worker process SIGKILLed mid-task: another worker finishes it after the lease
expires, and no node is released twice (the simulator's call counts say so)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from sitesim.site import Site
from tests.integration.drydock.conftest import Env, drydock_sections
from tests.support.procs import Proc, wait_until
from tests.support.services import ServiceProcess, worker_process, write_conf, write_tokens

pytestmark = pytest.mark.slow
# ipmi-b is an OpenIPMI ipmi_sim BMC, ipmi-c a pyghmi-based one (sitesim keeps a wake-up
# socket of its own first in pyghmi's socket list, so BMCs keep answering after other sites
# of the test process stopped).
NODES = ["rf-f", "rf-g", "rf-i", "rf-j", "ipmi-b", "ipmi-c"]


def start_worker(work: Path, name: str) -> Proc:
    return worker_process("drydock", work / "drydock.conf", work / f"{name}.log", work)


def test_killed_worker_is_taken_over_without_repeating_releases(
        dd_site: Site, tmp_path: Path, dd_env: Env) -> None:
    del dd_env  # the module's API must be done with its own nodes first
    tokens = write_tokens(tmp_path / "tokens.yaml")
    (tmp_path / "design.yaml").write_text(dd_site.design_yaml())
    sections = drydock_sections(dd_site, tmp_path,
                                worker={"threads": 0, "lease_seconds": 1.0},
                                steps={"step_retries": 2, "step_retry_delay": 0.2})
    api = ServiceProcess("drydock", tmp_path, sections)
    write_conf(tmp_path / "drydock.conf", sections)
    env = Env(dd_site, api.url, tokens["admin"], f"file://{tmp_path}/design.yaml", tmp_path)
    first = start_worker(tmp_path, "worker-1")
    second: Proc | None = None
    try:
        resp = env.post_task(NODES)
        assert resp.status_code == 201, resp.text
        task_id = resp.json()["task_id"]
        wait_until(lambda: any(env.releases(n) for n in NODES), timeout=30,
                   what="the first release call")
        first.kill(signal.SIGKILL)
        assert env.task(task_id)["status"] == "running"
        second = start_worker(tmp_path, "worker-2")
        task = env.wait(task_id, timeout=90)
        assert task["status"] == "complete"
        errors = [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
        assert task["result"]["status"] == "success", errors
        assert {n: env.releases(n) for n in NODES} == {n: 1 for n in NODES}
        assert f"Resuming task {task_id}" in second.output()
        for name in NODES:
            node = env.sim(f"/nodes/{name}")
            assert node["maas_status"] is None and node["power"] == "off"
    finally:
        first.stop()
        if second is not None:
            second.stop()
        api.stop()
        time.sleep(0.1)
