"""The launcher's waits: a service that exits or never answers its health check, and `berth
down` for a launcher that is already gone, each end with a reason (no wait past the limit)."""

from __future__ import annotations

import subprocess
import sys
import time

import click
import pytest

from berth_launcher.keeper import sweep
from berth_launcher.launch import stop_launcher
from berth_launcher.services import UpError, wait_healthy
from sitesim.ports import free_port


def test_a_service_that_exits_is_named_with_its_exit_code(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    with pytest.raises(UpError, match=r"^shipyard exited with 3; see .*api.log$"):
        wait_healthy("shipyard", f"http://127.0.0.1:{free_port()}", proc, tmp_path / "api.log",
                     timeout=30)


def test_a_service_that_never_answers_is_given_up_at_the_timeout(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        started = time.monotonic()
        with pytest.raises(UpError, match="drydock did not become healthy in 1s"):
            wait_healthy("drydock", f"http://127.0.0.1:{free_port()}", proc,
                         tmp_path / "api.log", timeout=0.6)
        assert time.monotonic() - started < 20
    finally:
        proc.kill()
        proc.wait()


def test_berth_down_for_a_launcher_already_gone_says_so(tmp_path, capsys) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    (tmp_path / "berth-up.pid").write_text(str(proc.pid))
    stop_launcher(tmp_path, timeout=5)
    assert capsys.readouterr().out == f"berth up (pid {proc.pid}) was not running\n"
    assert not (tmp_path / "berth-up.pid").exists()


def test_berth_down_gives_up_on_a_launcher_that_ignores_sigterm(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print('ready', flush=True); time.sleep(30)"],
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        (tmp_path / "berth-up.pid").write_text(str(proc.pid))
        with pytest.raises(click.ClickException, match=r"still running after 1s"):
            stop_launcher(tmp_path, timeout=0.6)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_sweep_with_nothing_marked_ends_at_once() -> None:
    started = time.monotonic()
    assert sweep("no-process-carries-this-token") == 0
    assert time.monotonic() - started < 5
