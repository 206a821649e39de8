"""One `berth up` run in the foreground: refuse taken ports, start, publish readiness once,
stop on a signal, and leave no process behind however the run ends (berth_launcher.keeper)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Protocol

import click

from berth_launcher.keeper import Keeper
from berth_launcher.ports import PortError, PortLayout, command_line, taken_ports
from berth_launcher.services import UpError
from berth_launcher.status import ENV_FILE, PID_FILE
from common.poll import NotYet, poll

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Runner(Protocol):
    def start(self) -> dict[str, str]: ...

    def stop(self) -> None: ...

    def summary(self) -> list[str]: ...


def running_launcher(directory: Path) -> int | None:
    """The PID of a `berth up` still running on `directory`, if any."""
    try:
        pid = int((directory / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    if pid == os.getpid() or "berth" not in command_line(pid):  # gone, or the PID reused
        return None
    return pid


def refuse_to_start(directory: Path, layout: PortLayout) -> None:
    """ClickException when this run cannot start: nothing has been started yet."""
    try:
        layout.check_range()
    except PortError as exc:
        raise click.ClickException(str(exc)) from exc
    other = running_launcher(directory)
    if other is not None:
        raise click.ClickException(f"berth up (pid {other}) already runs on {directory}; "
                                   f"stop it (berth down --dir {directory}) or use another --dir")
    problems = taken_ports(layout)
    if problems:
        raise click.ClickException(
            "refusing to start, ports berth up needs are taken:\n  " + "\n  ".join(problems) +
            "\nstop that process, or move every port with --port-offset")


class Signals:
    """SIGTERM, SIGINT (Ctrl-C) and SIGHUP (a closed terminal) stop the run: while it starts,
    at once (KeyboardInterrupt unwinds the start, which stops what it started); once ready,
    by setting `stop`."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.starting = True
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop.set()
        if self.starting:
            self.starting = False
            raise KeyboardInterrupt(signal.Signals(signum).name)


def serve(make_runner: Callable[[], Runner], directory: Path, layout: PortLayout,
          banner: Callable[[Runner, dict[str, str]], None]) -> None:
    """Run `berth up` in the foreground until a stop signal."""
    refuse_to_start(directory, layout)
    directory.mkdir(parents=True, exist_ok=True)
    env_file, pid_file = directory / ENV_FILE, directory / PID_FILE
    env_file.unlink(missing_ok=True)  # a stale one would say "ready" before this run is
    signals = Signals()
    keeper = Keeper(pid_file, env_file)
    runner: Runner | None = None
    try:
        keeper.start()  # before anything else starts
        pid_file.write_text(str(os.getpid()))
        runner = make_runner()
        env = runner.start()  # writes the env file last, when everything is ready
        signals.starting = False
        banner(runner, env)
        sys.stdout.flush()
        signals.stop.wait()
    except UpError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt as exc:
        click.echo(f"berth up: stopped while starting ({exc})", err=True)
        raise SystemExit(1) from None
    finally:
        signals.starting = False
        env_file.unlink(missing_ok=True)
        if runner is not None:
            runner.stop()
        pid_file.unlink(missing_ok=True)
        keeper.stop()


def stop_launcher(directory: Path, timeout: float) -> None:
    """`berth down`: SIGTERM the `berth up` of `directory` and wait until it has ended."""
    pid_file = directory / PID_FILE
    if not pid_file.exists():
        raise click.ClickException(f"no {pid_file}: berth up is not running here")
    pid = int(pid_file.read_text().strip())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink(missing_ok=True)
        click.echo(f"berth up (pid {pid}) was not running")
        return
    def ended() -> None | NotYet[None]:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return NotYet()

    def running(_: None) -> None:
        raise click.ClickException(f"berth up (pid {pid}) still running after {timeout:.0f}s")

    poll(ended, deadline=time.monotonic() + timeout, interval=0.1, expire=running)
    click.echo(f"stopped berth up (pid {pid})")
