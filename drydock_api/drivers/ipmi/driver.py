"""OobDriver for IPMI BMCs over `ipmitool -I lanplus` in a subprocess, as Ironic drives them:
each call its own process and session, bounded by a timeout, the password in the environment."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence

from drydock_api.drivers.ports import BmcAccess, EraseStatus, OobError

IPMITOOL = "ipmitool"
# what ipmitool prints when the BMC refused the user or password (RAKP 2 of the RMCP+ login)
# (ipmitool -v prints the step of the RMCP+ login that failed)
AUTH_REFUSED = ("hmac is invalid", "unauthorized name", "invalid user", "unauthorized role",
                "insufficient privilege", "invalid session")
# the BMC answered nothing (or not enough to open a session): nothing reached it
NO_SESSION = "unable to establish ipmi v2"
# the command was answered (stdout says so) and only closing the session failed: done
CLOSE_FAILED, ANSWERED = "close session command failed", "Chassis Power"

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class _Rerun(Exception):
    def __init__(self, error: OobError, *, no_session: bool) -> None:
        super().__init__(error.message)
        self.error, self.no_session = error, no_session


class IpmiDriver:
    """Each call runs `ipmitool` once: no state shared between calls, threads or processes.

    `retries` and `interval` are ipmitool's own retransmissions (-R, -N seconds for the
    first wait); a call whose session could not be opened runs again, up to `attempts`
    runs; `timeout` bounds the call, runs included (a run past it is killed). Cipher suite 3
    (RMCP+ HMAC-SHA1, AES-128), which every IPMI 2.0 BMC offers; ipmitool's default (17) makes
    it ask the BMC for its suites first, which BMCs without 17 answer slowly.
    """

    def __init__(self, *, retries: int = 3, interval: int = 1, timeout: float = 30.0,
                 attempts: int = 3, cipher_suite: int = 3, run: Runner = subprocess.run,
                 binary: str = IPMITOOL) -> None:
        self._retries, self._interval, self._timeout = retries, interval, timeout
        self._attempts = attempts
        self._cipher = cipher_suite
        self._run = run
        self._binary = binary

    def _argv(self, bmc: BmcAccess, args: Sequence[str]) -> list[str]:
        """The command line: the password is not on it (ps shows it), it is in IPMI_PASSWORD."""
        return [self._binary, "-v", "-I", "lanplus", "-H", bmc.address, "-p", str(bmc.port),
                "-U", bmc.account, "-E", "-C", str(self._cipher), "-R", str(self._retries),
                "-N", str(self._interval), *args]

    def _call(self, bmc: BmcAccess, what: str, *args: str, resend: bool = True) -> str:
        """Run ipmitool; run it again while time is left when no session could be opened
        (nothing reached the BMC) or, for a command that may be sent twice (`resend`: all
        but a reset), when its answer was lost."""
        deadline = time.monotonic() + self._timeout
        for attempt in range(1, self._attempts + 1):
            try:
                return self._once(bmc, what, args, deadline - time.monotonic())
            except _Rerun as exc:
                last = attempt == self._attempts or time.monotonic() >= deadline - 1
                if last or not (exc.no_session or resend):
                    raise exc.error from exc
        raise AssertionError("unreachable")

    def _once(self, bmc: BmcAccess, what: str, args: Sequence[str], left: float) -> str:
        env = {**os.environ, "IPMI_PASSWORD": bmc.credential}
        try:
            done = self._run(self._argv(bmc, args), env=env, capture_output=True, text=True,
                             timeout=max(left, 1.0), stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise OobError(f"IPMI BMC {bmc.describe()} did not answer {what} within "
                           f"{self._timeout:g} s", transient=True) from exc
        except FileNotFoundError as exc:
            raise OobError(f"IPMI BMC {bmc.describe()}: {what} needs {self._binary}, which is "
                           "not installed") from exc
        except OSError as exc:
            raise OobError(f"IPMI BMC {bmc.describe()}: cannot run {self._binary} for {what}: "
                           f"{exc}", transient=True) from exc
        stderr = (done.stderr or "").lower()
        if done.returncode != 0 and not (CLOSE_FAILED in stderr and ANSWERED in done.stdout):
            error = _failure(bmc, what, done.stderr or done.stdout or "")
            if error.transient:
                raise _Rerun(error, no_session=NO_SESSION in stderr)
            raise error
        return str(done.stdout)

    def power_state(self, bmc: BmcAccess) -> str:
        out = self._call(bmc, "power state", "chassis", "power", "status").lower()
        if out.rstrip().endswith(" on"):
            return "on"
        return "off" if out.rstrip().endswith(" off") else "unknown"

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        self._call(bmc, "soft off" if graceful else "power off",
                   "chassis", "power", "soft" if graceful else "off")

    def power_on(self, bmc: BmcAccess) -> None:
        self._call(bmc, "power on", "chassis", "power", "on")

    def power_cycle(self, bmc: BmcAccess) -> None:
        """On when off, else a hard reset (IPMI's power cycle does nothing to a node off)."""
        off = self.power_state(bmc) == "off"
        self._call(bmc, "power cycle", "chassis", "power", "on" if off else "reset",
                   resend=off)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        self._call(bmc, "set boot device", "chassis", "bootdev", "pxe")

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        return {}

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        raise OobError(f"IPMI BMC {bmc.describe()} cannot erase drives")

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        raise OobError(f"IPMI BMC {bmc.describe()} has no erase tasks")

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        return None


def _failure(bmc: BmcAccess, what: str, stderr: str) -> OobError:
    """ipmitool's last words → OobError: credentials refused (not retried), no answer
    (transient), or the BMC's refusal as ipmitool printed it (transient)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " ".join(lines).lower()
    if any(word in text for word in AUTH_REFUSED):
        return OobError(f"IPMI BMC {bmc.describe()} refused the credentials for {what} "
                        f"({lines[0] if lines else 'login refused'})")
    if not lines or NO_SESSION in text:
        return OobError(f"IPMI BMC {bmc.describe()} did not answer {what}", transient=True)
    return OobError(f"IPMI BMC {bmc.describe()} failed {what}: {lines[-1]}", transient=True)
