"""`berth up` as an operator runs it: DIR/env appears once, when the design is committed and
tagged; `berth status` says ready; on a moved port layout; and every process it started ends
with it, whether it is SIGKILLed or its terminal hangs up (SIGHUP)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from berth_launcher.ports import PortLayout
from tests.integration.launcher.helpers import (
    BERTH,
    DEMO_IPMI_NODES,
    ROOT,
    alive,
    descendants,
    free_offset,
    ports_in_use,
)

START_LIMIT = 300.0
SERVICE_KEYS = ("SHIPYARD_URL", "PROMENADE_URL", "DRYDOCK_URL")


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def wait_for_env(proc: subprocess.Popen[bytes], env_file: Path, log: Path) -> dict[str, str]:
    """Poll for the env file as a script would; its contents the moment it appears."""
    deadline = time.monotonic() + START_LIMIT
    while not env_file.exists():
        assert proc.poll() is None, f"berth up exited {proc.returncode}: {log.read_text()}"
        assert time.monotonic() < deadline, f"no env file after {START_LIMIT}s"
        time.sleep(0.02)
    return read_env(env_file)


def assert_ready_at_once(env: dict[str, str], offset: int) -> None:
    """Everything the env file promises holds the moment it exists."""
    layout = PortLayout(offset)
    for key, name in zip(SERVICE_KEYS, ("shipyard", "promenade", "drydock"), strict=True):
        assert env[key] == f"http://127.0.0.1:{layout.services[name]}"
        assert requests.get(f"{env[key]}/api/v1.0/health", timeout=10).status_code == 204
    assert env["SITESIM_URL"] == f"http://127.0.0.1:{layout.site.admin}"
    assert env["KUBE_API_URL"].endswith(f":{layout.site.kube}")
    assert env["MAAS_URL"].startswith(f"http://127.0.0.1:{layout.site.maas}/")
    assert env["REDFISH_URL"] == f"http://127.0.0.1:{layout.site.redfish}"
    headers = {"X-Auth-Token": env["BERTH_TOKEN"]}
    api = f"{env['SHIPYARD_URL']}/api/v1.0"
    revision = env["DESIGN_REF"].split("/revisions/")[1].split("/")[0]
    tags = requests.get(f"{api}/revisions/{revision}/tags", headers=headers, timeout=10)
    assert "site-action-success" in [t["tag"] for t in tags.json()]
    # what a redeploy plans against: the last successful site action's design
    docs = requests.get(f"{api}/configdocs/site", headers=headers, timeout=30,
                        params={"version": "successful_site_action"})
    assert docs.status_code == 200 and "drydock/BaremetalNode/v1" in docs.text


def status(berth_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BERTH, "status", "--dir", str(berth_dir), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_up_is_ready_once_and_leaves_nothing_behind(tmp_path, signum):
    offset = free_offset()
    berth_dir = tmp_path / "berth"
    berth_dir.mkdir()
    env_file = berth_dir / "env"
    env_file.write_text("SHIPYARD_URL=http://127.0.0.1:1\n")  # a stale one, of an earlier run
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([BERTH, "up", "--dir", str(berth_dir), "--port-offset",
                                 str(offset), "--site", str(ROOT / "etc/sites/demo.yaml")],
                                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 60
        while env_file.exists():  # removed before anything starts
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.02)
        assert status(berth_dir).returncode == 1
        env = wait_for_env(proc, env_file, log)
        assert_ready_at_once(env, offset)
        ready = status(berth_dir, "--wait", "--timeout", "60")
        assert ready.returncode == 0, ready.stderr
        assert ready.stdout.startswith("ready: ") and "site-action-success" in ready.stdout
        started = descendants(proc.pid)
        commands = " ".join(alive(started).values())
        for name in ("kube-apiserver", "kwok", "etcd", "ipmi_sim", "shipyard-api",
                     "promenade-api", "drydock-api", "berth_launcher.keeper"):
            assert name in commands
        proc.send_signal(signum)
        limit = 10 if signum == signal.SIGKILL else 60
        end = time.monotonic() + limit
        while alive(started) and time.monotonic() < end:
            time.sleep(0.1)
        assert alive(started) == {}, f"still running {limit}s after {signum!r}"
        proc.wait(10)
        layout = PortLayout(offset, ipmi_count=DEMO_IPMI_NODES)
        end = time.monotonic() + 10
        while ports_in_use(layout) and time.monotonic() < end:
            time.sleep(0.1)
        assert ports_in_use(layout) == []
        assert not env_file.exists()
        gone = status(berth_dir)
        assert gone.returncode == 1 and gone.stderr.startswith("not ready: ")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in alive(started):  # only what this berth up started
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_ctrl_c_while_starting_stops_everything_and_never_writes_the_env_file(tmp_path):
    offset = free_offset()
    berth_dir = tmp_path / "berth"
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([BERTH, "up", "--dir", str(berth_dir), "--port-offset",
                                 str(offset), "--site", str(ROOT / "etc/sites/demo.yaml")],
                                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + START_LIMIT
        while "kube-apiserver" not in " ".join(alive(started).values()):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
            started = descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 1
        assert "stopped while starting (SIGINT)" in log.read_text()
        end = time.monotonic() + 10
        while alive(started) and time.monotonic() < end:
            time.sleep(0.1)
        assert alive(started) == {}
        assert not (berth_dir / "env").exists() and not (berth_dir / "berth-up.pid").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in alive(started):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
