"""Running `berth` as an operator does (a child process), and watching what it leaves behind."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from berth_launcher.ports import PortLayout, port_free, socket_inodes
from berth_launcher.services import find_script

ROOT = Path(__file__).resolve().parents[3]
BERTH = find_script("berth") or "berth"
DEMO_IPMI_NODES = 1  # etc/sites/demo.yaml: node03 has an IPMI BMC (ipmi_sim)


def free_offset(postgres: bool = False, ipmi_count: int = DEMO_IPMI_NODES) -> int:
    """A --port-offset whose every port is free now, below the ephemeral range (so ports the
    site and other tests take from the kernel do not collide with it)."""
    for _ in range(200):
        offset = random.randrange(9000, 19000)
        layout = PortLayout(offset, postgres, ipmi_count)
        if all(port_free(p) for p in layout.tcp().values()) and \
                all(port_free(p, socket.SOCK_DGRAM) for p in layout.udp().values()):
            return offset
    raise RuntimeError("no free port offset found")


def start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/<pid>/stat): tells a PID reused apart.
    None once it has ended: gone, or a zombie whose every thread has exited (the main thread
    of a multi-threaded process is a zombie while the others still close its sockets)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = len(list(Path(f"/proc/{pid}/task").iterdir()))
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in "ZX" and threads <= 1 else fields[19]


def descendants(root: int) -> dict[int, str]:
    """Every live process below `root` (by parent PID), with its start time."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                started = start_time(pid)
                if started is not None:
                    found[pid] = started
                    frontier.append(pid)
    return found


def alive(processes: dict[int, str]) -> dict[int, str]:
    """Those of `processes` still running (same PID and start time, not a zombie)."""
    return {pid: cmdline(pid) for pid, started in processes.items()
            if start_time(pid) == started}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def ports_in_use(layout: PortLayout) -> list[int]:
    """Ports of `layout` something listens on (TCP) or is bound to (UDP)."""
    tcp = [p for p in layout.tcp().values() if socket_inodes(p) or not port_free(p)]
    udp = [p for p in layout.udp().values()
           if socket_inodes(p, udp=True) or not port_free(p, socket.SOCK_DGRAM)]
    return tcp + udp
