"""Starting and stopping the services' processes: `berth up` and the tests both use these."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import requests

from common.poll import NotYet, poll
from sitesim.processes import terminate

PR_SET_PDEATHSIG = 1
SOURCE_ROOT = Path(__file__).resolve().parents[1]
_LIBC = ctypes.CDLL(None, use_errno=True)


class UpError(Exception):
    """A service of `berth up` could not be started."""


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A preexec_fn: the child gets `signum` when the thread that started it ends (Linux
    PR_SET_PDEATHSIG, kept across exec); start children from the main thread. A parent that
    ended between fork and prctl is caught by the parent-PID check."""
    parent = os.getpid()

    def arm() -> None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def find_script(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def child_env(name: str, config: Path) -> dict[str, str]:
    """A service process's environment: its configuration file, and, when the launcher runs
    from a source checkout, that checkout first on the import path, so the service runs the
    same code as the launcher (not whichever checkout the environment was installed from)."""
    env = {**os.environ, f"{name.upper()}_CONFIG_FILE": str(config)}
    if (SOURCE_ROOT / "pyproject.toml").exists():
        env["PYTHONPATH"] = os.pathsep.join(
            [str(SOURCE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _spawn(argv: list[str], name: str, config: Path, log: Path,
           cwd: Path | None, with_parent: bool) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd,
                                env=child_env(name, config),
                                preexec_fn=die_with_parent() if with_parent else None)


def start_service(name: str, port: int, config: Path, log: Path, *, workers: int = 1,
                  args: Sequence[str] = (), cwd: Path | None = None,
                  with_parent: bool = False) -> subprocess.Popen[bytes]:
    """`<name>-api` under gunicorn on 127.0.0.1:`port` with `config`, logging to `log`
    (`with_parent`: SIGTERM when the starting thread ends, see die_with_parent)."""
    script = find_script(f"{name}-api")
    if script is None:
        raise UpError(f"console script {name}-api not found (is the project installed?)")
    return _spawn([script, "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
                   "--config-file", str(config), *args], name, config, log, cwd, with_parent)


def start_worker(name: str, config: Path, log: Path, cwd: Path | None = None,
                 with_parent: bool = False) -> subprocess.Popen[bytes]:
    """`shipyard-worker` or `drydock-worker` on `config`."""
    script = find_script(f"{name}-worker")
    if script is None:
        raise UpError(f"console script {name}-worker not found (is the project installed?)")
    return _spawn([script, "--config-file", str(config)], name, config, log, cwd, with_parent)


def wait_healthy(name: str, url: str, proc: subprocess.Popen[bytes], log: Path,
                 timeout: float = 60.0, path: str = "/api/v1.0/health") -> None:
    """Until `url` + `path` answers 200/204; UpError when the process exits or time runs out."""
    def healthy() -> None | NotYet[None]:
        if proc.poll() is not None:
            raise UpError(f"{name} exited with {proc.returncode}; see {log}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{url}{path}", timeout=1).status_code in (200, 204):
                return None
        return NotYet()

    def late(_: None) -> None:
        raise UpError(f"{name} did not become healthy in {timeout:.0f}s; see {log}")

    poll(healthy, deadline=time.monotonic() + timeout, interval=0.1, expire=late)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL after `timeout`; then whatever is left of the process group the
    service runs in (its own session: a terminal's Ctrl-C reaches `berth up` alone, which
    stops each service in order)."""
    terminate(proc, timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
