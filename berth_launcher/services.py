"""Starting and stopping the services' processes: `berth up` and the tests both use these."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import requests

from sitesim.processes import terminate


class UpError(Exception):
    """A service of `berth up` could not be started."""


def find_script(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def _spawn(argv: list[str], name: str, config: Path, log: Path,
           cwd: Path | None) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd,
                                env={**os.environ, f"{name.upper()}_CONFIG_FILE": str(config)})


def start_service(name: str, port: int, config: Path, log: Path, *, workers: int = 1,
                  args: Sequence[str] = (), cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """`<name>-api` under gunicorn on 127.0.0.1:`port` with `config`, logging to `log`."""
    script = find_script(f"{name}-api")
    if script is None:
        raise UpError(f"console script {name}-api not found (is the project installed?)")
    return _spawn([script, "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
                   "--config-file", str(config), *args], name, config, log, cwd)


def start_worker(name: str, config: Path, log: Path,
                 cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """`shipyard-worker` or `drydock-worker` on `config`."""
    script = find_script(f"{name}-worker")
    if script is None:
        raise UpError(f"console script {name}-worker not found (is the project installed?)")
    return _spawn([script, "--config-file", str(config)], name, config, log, cwd)


def wait_healthy(name: str, url: str, proc: subprocess.Popen[bytes], log: Path,
                 timeout: float = 60.0, path: str = "/api/v1.0/health") -> None:
    """Until `url` + `path` answers 200/204; UpError when the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UpError(f"{name} exited with {proc.returncode}; see {log}")
        try:
            if requests.get(f"{url}{path}", timeout=1).status_code in (200, 204):
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise UpError(f"{name} did not become healthy in {timeout:.0f}s; see {log}")


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL after `timeout`; then whatever is left of the process group the
    service runs in (its own session: a terminal's Ctrl-C reaches `berth up` alone, which
    stops each service in order)."""
    terminate(proc, timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
