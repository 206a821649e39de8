"""Drydock's IPMI driver over pyghmi as it was before ipmitool replaced it, kept for
bench/ipmi_compare.py (one session per BMC per process, the IO-thread watchdog)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyghmi import exceptions as ipmi_exc
from pyghmi.ipmi import command as ipmi_command
from pyghmi.ipmi.private import session as ipmi_session

from drydock_api.drivers.ports import BmcAccess, EraseStatus, OobError
from sitesim.bmc.pyghmi_io import IoWatchdog
from sitesim.bmc.udpsocket import keep_non_blocking

Key = tuple[str, int, str]


@contextmanager
def translated(bmc: BmcAccess, what: str) -> Iterator[None]:
    """pyghmi exceptions → OobError naming the BMC (never its credential)."""
    try:
        yield
    except (ipmi_exc.IpmiException, OSError, ValueError, KeyError, TypeError) as exc:
        raise OobError(_describe(bmc, what, exc), transient=True) from exc


def _describe(bmc: BmcAccess, what: str, exc: BaseException) -> str:
    """pyghmi often says nothing ("None") or "timeout" when the BMC is simply not there."""
    text = str(exc).strip()
    if text in ("", "None") or "timeout" in text.lower() or "timed out" in text.lower():
        return f"IPMI BMC {bmc.describe()} did not answer {what}"
    return f"IPMI BMC {bmc.describe()} failed {what}: {text}"


def _keep_socket_non_blocking(cmd: Any) -> None:
    """pyghmi's sockets, shared by its sending and reading threads, must never block: see
    sitesim.bmc.udpsocket (a blocked read would stall every IPMI call of the process for good)."""
    sock = getattr(getattr(cmd, "ipmi_session", None), "socket", None)
    if isinstance(sock, socket.socket):
        keep_non_blocking(sock)


class IpmiDriver:
    """Keeps one pyghmi Command per BMC and serialises every pyghmi call in the process.

    pyghmi keeps its sessions, sockets and I/O loop in process-wide state that is not safe
    for concurrent logins from several threads, and it hangs when a second session to the
    same BMC is opened while a stale one is registered; so calls are serialised, and a broken
    session is dropped (and its registration removed) before a new one is made. Power changes
    use wait=False; the caller polls. Each call takes milliseconds, so the lock costs little.
    pyghmi's IO thread is watched from the first call on (`sitesim.bmc.pyghmi_io`): if it ended,
    every call, and the lock with it, would wait for good.
    """

    def __init__(self, *, factory: Callable[..., Any] = ipmi_command.Command) -> None:
        self._factory = factory
        self._sessions: dict[Key, Any] = {}
        self._lock = threading.Lock()

    def _forget(self, bmc: BmcAccess, key: Key) -> None:
        self._sessions.pop(key, None)
        stale = (bmc.address, bmc.account, bmc.credential, bmc.port, None)
        ipmi_session.Session.initting_sessions.pop(stale, None)

    def _call(self, bmc: BmcAccess, what: str, fn: Callable[[Any], Any]) -> Any:
        key = (bmc.address, bmc.port, bmc.account)
        IoWatchdog.ensure()
        with self._lock:
            try:
                with translated(bmc, what):
                    cmd = self._sessions.get(key)
                    if cmd is None:
                        cmd = self._factory(bmc=bmc.address, userid=bmc.account,
                                            password=bmc.credential, port=bmc.port)
                        self._sessions[key] = cmd
                        _keep_socket_non_blocking(cmd)
                    return fn(cmd)
            except OobError:
                self._forget(bmc, key)
                raise

    def power_state(self, bmc: BmcAccess) -> str:
        result = self._call(bmc, "power state", lambda c: c.get_power())
        return str((result or {}).get("powerstate", "unknown"))

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        state = "shutdown" if graceful else "off"
        self._call(bmc, "soft off" if graceful else "power off",
                   lambda c: c.set_power(state, wait=False))

    def power_on(self, bmc: BmcAccess) -> None:
        self._call(bmc, "power on", lambda c: c.set_power("on", wait=False))

    def power_cycle(self, bmc: BmcAccess) -> None:
        self._call(bmc, "power cycle", lambda c: c.set_power("boot", wait=False))

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        self._call(bmc, "set boot device", lambda c: c.set_bootdev("network", persist=False))

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        return {}

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        raise OobError(f"IPMI BMC {bmc.describe()} cannot erase drives")

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        raise OobError(f"IPMI BMC {bmc.describe()} has no erase tasks")

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        return None
