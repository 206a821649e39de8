"""`berth up` refuses to start, naming the process, when a port it needs is taken."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from berth_launcher.ports import PortLayout
from tests.integration.launcher.helpers import BERTH, ROOT, free_offset

HOLD = ("import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
        "print('listening', flush=True); time.sleep(120)\n")


@pytest.fixture
def holder(tmp_path):
    """Start a process listening on a port; stop it (by PID) afterwards."""
    procs = []
    script = tmp_path / "port_holder.py"
    script.write_text(HOLD)

    def hold(port: int) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, str(script), str(port)],
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
        return proc

    yield hold
    for proc in procs:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("which", ["promenade", "Kubernetes API"])
def test_up_refuses_a_taken_port_naming_the_process_and_starts_nothing(tmp_path, holder, which):
    offset = free_offset()
    port = PortLayout(offset, ipmi_count=1).tcp()[which]
    proc = holder(port)
    berth_dir = tmp_path / "berth"
    (berth_dir).mkdir()
    (berth_dir / "env").write_text("SHIPYARD_URL=http://127.0.0.1:1\n")  # an earlier run's
    started = time.monotonic()
    done = subprocess.run([BERTH, "up", "--dir", str(berth_dir), "--port-offset", str(offset),
                           "--site", str(ROOT / "etc/sites/demo.yaml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"port {port}/tcp ({which}) is taken by pid {proc.pid}" in done.stderr
    assert f"port_holder.py {port})" in done.stderr  # its command line
    assert "--port-offset" in done.stderr
    assert time.monotonic() - started < 30
    # nothing started: no site directory, no files of a run, the other ports still free
    assert sorted(p.name for p in berth_dir.iterdir()) == ["env"]
    layout = PortLayout(offset, ipmi_count=1)
    for name, other in layout.tcp().items():
        if name != which:
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", other), timeout=0.5)


def test_up_refuses_an_offset_that_leaves_the_port_range(tmp_path):
    done = subprocess.run([BERTH, "up", "--dir", str(tmp_path), "--port-offset", "60000"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0
    assert "outside 1024-65535" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_up_refuses_a_directory_another_berth_up_runs_on(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                              "berth", "up"])
    try:
        (tmp_path / "berth-up.pid").write_text(str(other.pid))
        done = subprocess.run([BERTH, "up", "--dir", str(tmp_path), "--port-offset",
                               str(free_offset()), "--site", str(ROOT / "etc/sites/demo.yaml")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert f"berth up (pid {other.pid}) already runs on {tmp_path}" in done.stderr
        assert [p.name for p in tmp_path.iterdir()] == ["berth-up.pid"]
    finally:
        other.kill()
        other.wait(10)
