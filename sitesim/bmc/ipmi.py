"""IPMI BMCs built on pyghmi's `Bmc`: lanplus on UDP loopback ports, state in the site model."""

from __future__ import annotations

import errno
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from pyghmi.ipmi import bmc as pyghmi_bmc
from pyghmi.ipmi.private import session as ipmisession
from pyghmi.ipmi.private.serversession import ServerSession

from sitesim.bmc.pyghmi_io import IoWatchdog
from sitesim.bmc.udpsocket import keep_non_blocking
from sitesim.model import SiteModel
from sitesim.siteconfig import NodeSpec

# IPMI boot device names (as pyghmi decodes them) -> the site model's names (Redfish-like).
BOOT_FROM_IPMI = {"network": "pxe", "hd": "hdd", "optical": "cd", "setup": "biossetup",
                  "floppy": "usb", "safe": "hdd", "default": "hdd"}
BOOT_TO_IPMI = {"pxe": "network", "hdd": "hd", "cd": "optical", "biossetup": "setup",
                "usb": "floppy"}
CHASSIS_OPS = {0: "power_off", 1: "power_on", 2: "power_cycle", 3: "power_reset",
               5: "graceful_shutdown"}
CC_NOT_IN_STATE = 0xD5
LOG = logging.getLogger(__name__)


class _FallbackSession(ServerSession):  # type: ignore[misc]
    """Answers 'unsupported' (RMCP+ 0x11) to auth algorithms other than HMAC-SHA1, so that
    clients asking for cipher suite 17 fall back to suite 3, as with a suite-3-only BMC."""

    def create_open_session_response(self, request: Any) -> bytearray:
        data = bytearray(request)
        if len(data) > 12 and data[12] != 1:
            self.clientsessionid = data[4:8]
            return bytearray([data[0], 0x11, 0, 0]) + data[4:8]
        response: bytearray = super().create_open_session_response(request)
        return response


class SiteIpmiBmc(pyghmi_bmc.Bmc):  # type: ignore[misc]
    """One node's IPMI BMC; chassis power and boot device read and write the site model."""

    def __init__(self, model: SiteModel, node: NodeSpec, port: int) -> None:
        super().__init__({node.bmc.user: node.bmc.password}, port=port, address="127.0.0.1")
        keep_non_blocking(self.serversocket)  # see sitesim.bmc.udpsocket
        self.model = model
        self.node = node

    def sessionless_data(self, data: Any, sockaddr: Any) -> None:
        raw = bytearray(data)
        if (len(raw) >= 22 and raw[0] == 6 and raw[2:4] == b"\xff\x07" and raw[4] == 6
                and raw[5] == 16):
            _FallbackSession(self.authdata, self.kg, sockaddr, self.serversocket, raw[16:],
                             self.uuid, bmc=self)
            return
        super().sessionless_data(data, sockaddr)

    def get_power_state(self) -> str:
        self.model.record_call("ipmi", "get_power_state", self.node.name)
        return "on" if self.model.is_on(self.node.name) else "off"

    def control_chassis(self, request: Any, session: Any) -> None:
        directive = request["data"][0] if request["data"] else -1
        op = CHASSIS_OPS.get(directive)
        name = self.node.name
        if op is None:
            session.send_ipmi_response(code=0xCC)
            return
        self.model.record_call("ipmi", op, name)
        effect = self.model.fault("bmc.power", name)
        if effect == "hang":
            return  # no answer at all: the client times out
        if effect == "fail":
            session.send_ipmi_response(code=CC_NOT_IN_STATE)
            return
        apply_chassis(self.model, self.node, directive)
        session.send_ipmi_response(code=0)

    def get_boot_device(self) -> str:
        return BOOT_TO_IPMI.get(self.model.boot_device(self.node.name), "default")

    def set_boot_device(self, bootdevice: str) -> None:
        self.model.record_call("ipmi", "set_boot", self.node.name)
        self.model.set_boot_device(self.node.name, BOOT_FROM_IPMI.get(bootdevice, bootdevice))

    def get_system_guid(self) -> Any:
        return self.uuid

    def unregister(self) -> None:
        """Take the socket out of pyghmi's shared IO loop (see `PyghmiBmcs.stop`)."""
        ipmisession.Session.bmc_handlers.pop(self.serversocket, None)
        ipmisession.Session.socketpool.pop(self.serversocket, None)
        if self.serversocket in ipmisession.iosockets:
            ipmisession.iosockets.remove(self.serversocket)


def apply_chassis(model: SiteModel, node: NodeSpec, directive: int) -> None:
    """Apply an IPMI chassis control directive (0 off, 1 on, 2 cycle, 3 reset, 5 soft off)."""
    timings, name = model.spec.timings, node.name
    if directive == 0:
        model.set_power_later(name, False, timings.power)
    elif directive == 1:
        model.set_power_later(name, True, timings.power)
    elif directive in (2, 3):
        if model.is_on(name):
            model.set_power(name, False)
            model.set_power_later(name, True, timings.power)
        elif directive == 3:
            return
        else:
            model.set_power_later(name, True, timings.power)
    elif directive == 5 and not node.bmc.ignore_graceful_shutdown \
            and model.fault("bmc.graceful_shutdown", name) is None:
        model.set_power_later(name, False, timings.graceful_shutdown)


class _Listener:
    """pyghmi dispatches every server socket from one process-wide queue, so all sites of a
    process share one thread that pumps it (started by the first user, stopped by the last).

    pyghmi wakes its select() loop by sending a byte to `iosockets[0]`, which would be the
    first BMC's socket: once that BMC closed (a site stopped), wake-ups went to a socket the
    loop no longer watched, and every BMC of the process stopped answering until select()'s
    300 s timeout. An anchor socket that is never closed is kept at `iosockets[0]`.
    """

    lock = threading.Lock()
    users = 0
    stop = threading.Event()
    pump: threading.Thread | None = None
    anchor: socket.socket | None = None

    @classmethod
    def ensure_anchor(cls) -> None:
        """Put the process's wake-up socket first in pyghmi's socket list (once)."""
        with cls.lock:
            if cls.anchor is None:
                cls.anchor = _wake_socket()
            if cls.anchor not in ipmisession.iosockets:
                ipmisession.iosockets.insert(0, cls.anchor)

    @classmethod
    def acquire(cls) -> None:
        with cls.lock:
            cls.users += 1
            if cls.pump is None:
                cls.stop = threading.Event()
                cls.pump = threading.Thread(target=cls._pump, args=(cls.stop,),
                                            name="sitesim-ipmi", daemon=True)
                cls.pump.start()
            IoWatchdog.ensure()  # pyghmi's IO thread revived if it ends

    @classmethod
    def release(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users > 0 or cls.pump is None:
                return
            cls.stop.set()
            pump, cls.pump = cls.pump, None
        pump.join(timeout=5)

    @classmethod
    def io_pass(cls, within: float) -> threading.Event:
        """An event pyghmi's IO thread sets once it has read its sockets after this call and
        either a packet came or `within` seconds passed (its waiters are served so)."""
        done = threading.Event()
        deadline = ipmisession._monotonic_time() + within
        ipmisession.ioqueue.append((deadline, done, None))
        if cls.anchor is not None and deadline < ipmisession.selectdeadline:
            cls.anchor.sendto(b"\x01", cls.anchor.getsockname()[:2])  # break into its select()
        return done

    @classmethod
    def _pump(cls, stop: threading.Event) -> None:
        """Hand received packets to the BMCs. Each wait on the IO thread is bounded (pyghmi's
        own is not: its waiter is lost if the thread ends), and a request that fails is logged
        while the others go on, so that one bad exchange never silences every BMC."""
        while not stop.is_set():
            if not ipmisession.sessionqueue:
                cls.io_pass(0.5).wait(1.0)
            while ipmisession.sessionqueue:
                try:
                    ipmisession.sessionqueue.popleft().process_pktqueue()
                except IndexError:  # another pyghmi loop in this process took it
                    break
                except Exception:
                    LOG.exception("an IPMI request failed in the simulated BMC")


def _wake_socket() -> socket.socket:
    """A socket pyghmi's `_io_wait` can reach at (`myself`, its port)."""
    me = ipmisession.myself
    if me is None:
        ipmisession.myself = me = "127.0.0.1"
    if ":" in me:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::1" if me == "::1" else "::", 0))
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((me, 0))
    return sock


def _bound(model: SiteModel, node: NodeSpec, port: int,
           pick: Callable[[], int] | None, tries: int = 5) -> SiteIpmiBmc:
    for _ in range(tries - 1):
        try:
            return SiteIpmiBmc(model, node, port)
        except OSError as exc:
            if pick is None or exc.errno != errno.EADDRINUSE:
                raise
            port = pick()
    return SiteIpmiBmc(model, node, port)


class PyghmiBmcs:
    """Every pyghmi BMC of a site, served by the process's IPMI listener thread."""

    def __init__(self, model: SiteModel, nodes: list[tuple[NodeSpec, int]],
                 pick: Callable[[], int] | None = None) -> None:
        """`pick`, when given, chooses another port for a BMC whose port was taken since it
        was chosen (a port found free is not reserved until bound); `ports` has the result."""
        if nodes:
            _Listener.ensure_anchor()
        self.bmcs: list[SiteIpmiBmc] = []
        self._started = False
        try:
            for node, port in nodes:
                self.bmcs.append(_bound(model, node, port, pick))
        except BaseException:
            self.stop()
            raise
        self.ports = {bmc.node.name: bmc.port for bmc in self.bmcs}

    def start(self) -> None:
        if self.bmcs and not self._started:
            _Listener.acquire()
            self._started = True

    def stop(self) -> None:
        """Close the sockets once pyghmi's IO thread can no longer be reading them: it has no
        error handling, and one read of a closed socket would end it, silencing every BMC."""
        for bmc in self.bmcs:
            bmc.unregister()
        if self.bmcs:
            _Listener.io_pass(0.0).wait(5.0)
        for bmc in self.bmcs:
            bmc.serversocket.close()
        if self._started:
            _Listener.release()
            self._started = False
