"""Helpers for tests of pyghmi's process-wide IPMI IO: a minimal BMC model, a node, and ending
pyghmi's IO thread as an unexpected error would."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

from pyghmi.ipmi.private import session as ipmisession

from tests.support.procs import wait_until

USER, PASSWORD = "admin", "listener-test"


class Model:
    """The little of the site model a BMC reads for `power status`."""

    def record_call(self, *args: object) -> None:
        pass

    def is_on(self, name: str) -> bool:
        return True


def node(name: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, bmc=SimpleNamespace(user=USER, password=PASSWORD))


def end_io_thread() -> threading.Thread:
    """End pyghmi's IO thread (select() on a closed socket raises in it); the ended thread."""
    before = ipmisession.iothread
    broken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    broken.close()
    ipmisession.iosockets.append(broken)
    try:
        wait_until(lambda: not before.is_alive(), timeout=10, what="the IO thread to end")
    finally:
        ipmisession.iosockets.remove(broken)
    return before
