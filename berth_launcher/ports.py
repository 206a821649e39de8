"""The fixed ports `berth up` listens on (moved together by --port-offset), and who holds one."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from berth_launcher.berthconfig import POSTGRES_PORT, SECOND_API_PORTS, SERVICES
from sitesim.site import SitePorts

PROC = Path("/proc")
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
MIN_PORT, MAX_PORT = 1024, 65535


class PortError(Exception):
    """A port `berth up` needs is unusable (out of range, or held by another process)."""


@dataclass(frozen=True)
class PortLayout:
    """Every fixed port of one `berth up`: the default ones moved by `offset`."""

    offset: int = 0
    postgres: bool = False
    ipmi_count: int = 0

    @property
    def services(self) -> dict[str, int]:
        return {name: port + self.offset for name, port in SERVICES.items()}

    @property
    def second_apis(self) -> dict[str, int]:
        return {name: port + self.offset for name, port in SECOND_API_PORTS.items()}

    @property
    def postgres_port(self) -> int:
        return POSTGRES_PORT + self.offset

    @property
    def site(self) -> SitePorts:
        std = SitePorts.standard()
        return SitePorts(admin=std.admin + self.offset, kube=std.kube + self.offset,
                         maas=std.maas + self.offset, redfish=std.redfish + self.offset,
                         ipmi_base=std.ipmi_base + self.offset, ironic=std.ironic + self.offset)

    def tcp(self) -> dict[str, int]:
        """What listens on each TCP port, by name."""
        site = self.site
        ports = {**self.services, "sitesim admin API": site.admin,
                 "Kubernetes API": site.kube, "MAAS": site.maas, "Redfish": site.redfish}
        if self.postgres:
            ports.update({f"{name}-2": port for name, port in self.second_apis.items()})
            ports["PostgreSQL"] = self.postgres_port
        return ports

    def udp(self) -> dict[str, int]:
        """The IPMI BMCs' UDP ports."""
        base = self.site.ipmi_base
        return {f"IPMI BMC {index + 1}": base + index for index in range(self.ipmi_count)}

    def check_range(self) -> None:
        ports = [*self.tcp().values(), *self.udp().values()]
        if ports and (min(ports) < MIN_PORT or max(ports) > MAX_PORT):
            raise PortError(f"port offset {self.offset} puts ports at {min(ports)}-"
                            f"{max(ports)}, outside {MIN_PORT}-{MAX_PORT}")


def port_free(port: int, kind: int = socket.SOCK_STREAM) -> bool:
    """Whether a server could bind 127.0.0.1:`port` now (as the services do, SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def socket_inodes(port: int, udp: bool = False) -> set[str]:
    """Inodes of the sockets bound to `port` (TCP: listening ones) per /proc/net."""
    inodes: set[str] = set()
    for table in (("udp", "udp6") if udp else ("tcp", "tcp6")):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or int(fields[1].rsplit(":", 1)[1], 16) != port:
                continue
            if udp or fields[3] == LISTEN:
                inodes.add(fields[9])
    return inodes


def command_line(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(raw.replace(b"\0", b" ").decode(errors="replace").split()) or "?"


def port_holders(port: int, udp: bool = False) -> list[tuple[int, str]]:
    """(pid, command line) of each process holding a socket on `port`, as far as this user
    may see (/proc/<pid>/fd of other users' processes is readable only by root)."""
    wanted = {f"socket:[{inode}]" for inode in socket_inodes(port, udp)}
    holders: list[tuple[int, str]] = []
    if not wanted:
        return holders
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target in wanted:
                holders.append((int(entry.name), command_line(int(entry.name))))
                break
    return sorted(holders)


def taken_ports(layout: PortLayout) -> list[str]:
    """One line per port of `layout` something else holds: what needs it and who holds it."""
    problems = []
    checks = [(name, port, False) for name, port in layout.tcp().items()]
    checks += [(name, port, True) for name, port in layout.udp().items()]
    for name, port, udp in checks:
        if port_free(port, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM):
            continue
        holders = port_holders(port, udp)
        who = "; ".join(f"pid {pid} ({cmd[:160]})" for pid, cmd in holders) or \
            "no process this user can see (another user's, or sockets of one that just ended)"
        problems.append(f"port {port}/{'udp' if udp else 'tcp'} ({name}) is taken by {who}")
    return problems
