"""A PostgreSQL cluster whose server was killed outright (as the keeper does to whatever
outlives a SIGKILLed `berth up`) is replaced by a fresh one on the next start."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from berth_launcher.pgcluster import PgCluster
from tests.support.procs import free_port


@pytest.mark.skipif(not Path("/usr/lib/postgresql/15/bin/initdb").exists(),
                    reason="PostgreSQL server binaries are not installed")
def test_a_killed_cluster_with_a_stale_pid_file_is_replaced():
    root = Path(tempfile.mkdtemp(prefix="berth-pg-killed-"))
    root.chmod(0o755)  # the postgres user must reach it when the tests run as root
    port = free_port()
    first = PgCluster(root / "pg", port).start()
    second = None
    try:
        pid = int((first.data / "postmaster.pid").read_text().split("\n", 1)[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while first.postmaster_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (first.data / "postmaster.pid").exists()  # stale: nobody removed it
        second = PgCluster(root / "pg", port).start()
        assert second.create_database("fresh").endswith("/fresh")
    finally:
        if second is not None:
            second.stop()  # the first one's server is gone: killed above
        shutil.rmtree(root, ignore_errors=True)
