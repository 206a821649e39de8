"""Start and stop real processes in tests: free ports, readiness polling, stop by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import requests

from sitesim.ports import free_port

__all__ = ["free_port"]


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0, interval: float = 0.05,
               what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}")


def http_ok(url: str, codes: Sequence[int] = (200, 204)) -> bool:
    try:
        return requests.get(url, timeout=1).status_code in codes
    except requests.RequestException:
        return False


class Proc:
    """A child process we started; `stop()` ends it (and only it) by PID."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None,
                 log: Path | None = None, cwd: str | None = None) -> None:
        self.log = log
        out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
        self.popen = subprocess.Popen(
            list(argv), env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
            cwd=cwd, start_new_session=True)

    @classmethod
    def adopt(cls, popen: subprocess.Popen[bytes], log: Path | None = None) -> Proc:
        """A process started elsewhere (in its own session), e.g. by the `berth` launcher."""
        proc = cls.__new__(cls)
        proc.log, proc.popen = log, popen
        return proc

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)
            self.popen.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> None:
        if not self.alive():
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""
