"""No process of `berth up` outlives it: a keeper process ends them all when `berth up` ends.

`berth up` marks its own environment with a run token before it starts anything, so every
process it starts, and every process those start (gunicorn workers, the Kubernetes control
plane, etcd members, ipmi_sim, PostgreSQL), carries the token in its /proc/<pid>/environ even
after it is re-parented or in a session of its own. The keeper runs in a session of its own
(a terminal's hangup or Ctrl-C does not reach it) and waits on a pipe only `berth up` holds
open: end of file means `berth up` is gone, however it ended (SIGKILL included). It then
removes `berth up`'s env and PID files and signals every process carrying the token: SIGTERM,
then SIGKILL to whatever is left after a grace period. After an orderly stop nothing carries
the token any more and the keeper just exits.

The services `berth up` starts also get PR_SET_PDEATHSIG (berth_launcher.services): they are
told at once, without waiting for the keeper."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from common.poll import NotYet, poll

RUN_TOKEN_ENV = "BERTH_UP_RUN"
GRACE_SECONDS = 3.0
PROC = Path("/proc")


def marked_pids(token: str, exclude: int) -> list[int]:
    """PIDs of the processes whose environment carries `RUN_TOKEN_ENV=token`."""
    needle = f"{RUN_TOKEN_ENV}={token}".encode()
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == exclude:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def sweep(token: str, grace: float = GRACE_SECONDS) -> int:
    """SIGTERM every marked process, SIGKILL what is left after `grace`; how many there were."""
    me = os.getpid()
    first = marked_pids(token, me)
    signal_all(first, signal.SIGTERM)

    def gone() -> None | NotYet[list[int]]:
        left = marked_pids(token, me)
        return NotYet(left) if left else None

    def kill(left: list[int]) -> None:
        signal_all(left, signal.SIGKILL)

    def stop(_: list[int]) -> None:
        return None

    poll(gone, deadline=time.monotonic() + grace, interval=0.1, expire=stop)
    # SIGKILL what is left; processes that forked meanwhile are caught on the next pass
    poll(gone, attempts=51, interval=0.1, between=kill, expire=stop)
    return len(first)


def remove_run_files(pid_file: Path, env_file: Path, launcher: int) -> None:
    """The env and PID files of the ended `berth up`, unless another run wrote them since."""
    try:
        if int(pid_file.read_text().strip()) != launcher:
            return
    except (OSError, ValueError):
        return
    env_file.unlink(missing_ok=True)
    pid_file.unlink(missing_ok=True)


def wait_for_launcher(read_fd: int, launcher: int) -> None:
    """Until the pipe from the launcher reaches end of file (or the launcher is gone)."""
    while True:
        ready, _, _ = select.select([read_fd], [], [], 1.0)
        if ready and not os.read(read_fd, 4096):
            return
        if os.getppid() != launcher:
            return


def main(argv: list[str]) -> int:
    """`python -m berth_launcher.keeper TOKEN LAUNCHER_PID PID_FILE ENV_FILE`, stdin the pipe."""
    token, launcher, pid_file, env_file = argv[0], int(argv[1]), Path(argv[2]), Path(argv[3])
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    wait_for_launcher(sys.stdin.fileno(), launcher)
    remove_run_files(pid_file, env_file, launcher)
    sweep(token)
    return 0


class Keeper:
    """The keeper of this process's run: `start()` before anything else is started."""

    def __init__(self, pid_file: Path, env_file: Path) -> None:
        self.token = uuid.uuid4().hex
        self.pid_file = pid_file
        self.env_file = env_file
        self._write_fd: int | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Keeper:
        read_fd, self._write_fd = os.pipe()  # both ends non-inheritable
        env = {k: v for k, v in os.environ.items() if k != RUN_TOKEN_ENV}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "berth_launcher.keeper", self.token, str(os.getpid()),
                 str(self.pid_file), str(self.env_file)],
                stdin=read_fd, stdout=subprocess.DEVNULL, start_new_session=True, env=env)
        finally:
            os.close(read_fd)
        os.environ[RUN_TOKEN_ENV] = self.token
        return self

    def stop(self) -> None:
        """After an orderly stop: the keeper sweeps whatever is left, then exits."""
        os.environ.pop(RUN_TOKEN_ENV, None)
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=GRACE_SECONDS + 10)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
