"""The keeper ends every process a launcher started, however deep and however detached,
when the launcher is SIGKILLed; processes the launcher did not start are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from berth_launcher.keeper import GRACE_SECONDS
from tests.integration.launcher.helpers import alive, start_time

LAUNCHER = """
import os, subprocess, sys, time
from pathlib import Path
from berth_launcher.keeper import Keeper

run = Path(sys.argv[1])
keeper = Keeper(run / "berth-up.pid", run / "env").start()
(run / "berth-up.pid").write_text(str(os.getpid()))
(run / "env").write_text("SHIPYARD_URL=http://127.0.0.1:1\\n")
DAEMON = ("import os, time\\n"
          "if os.fork(): os._exit(0)\\n"
          "os.setsid()\\n"
          "print(os.getpid(), flush=True)\\n"
          "time.sleep(300)\\n")
STUBBORN = ("import signal, time\\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
            "print('ready', flush=True)\\n"
            "time.sleep(300)\\n")
daemon = subprocess.Popen([sys.executable, "-c", DAEMON], stdout=subprocess.PIPE, text=True)
daemon_pid = int(daemon.stdout.readline())
daemon.wait()
stubborn = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True)
stubborn.stdout.readline()
print(daemon_pid, stubborn.pid, keeper.process.pid, flush=True)
time.sleep(300)
"""


def test_keeper_ends_detached_and_stubborn_descendants_of_a_killed_launcher(tmp_path):
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert launcher.stdout is not None
        pids = [int(p) for p in launcher.stdout.readline().split()]  # daemon, stubborn, keeper
        daemon = pids[0]
        watched = {pid: start_time(pid) for pid in pids}
        assert all(watched.values())
        # the daemon left the launcher's tree: re-parented, in a session of its own
        assert os.getsid(daemon) == daemon
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)
        killed_at = time.monotonic()
        while alive(watched) and time.monotonic() - killed_at < GRACE_SECONDS + 10:
            time.sleep(0.1)
        assert alive(watched) == {}
        assert time.monotonic() - killed_at < GRACE_SECONDS + 5
        assert not (tmp_path / "env").exists() and not (tmp_path / "berth-up.pid").exists()
        assert bystander.poll() is None  # not one of the launcher's
    finally:
        bystander.kill()
        bystander.wait(10)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(10)
