"""Stopping the child processes the site starts, and waiting for a stop signal."""

from __future__ import annotations

import signal
import subprocess
import threading
from types import FrameType
from typing import Any


def terminate(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited after `timeout`; always reaped."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


def stop_event_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C), for a foreground command to wait on."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop
