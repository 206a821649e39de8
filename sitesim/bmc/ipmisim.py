"""IPMI BMCs served by OpenIPMI's ipmi_sim, whose chassis_control program calls the admin API."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from itertools import islice
from pathlib import Path

from sitesim.processes import terminate
from sitesim.siteconfig import NodeSpec

IPMI_SIM = "ipmi_sim"
START_ATTEMPTS = 3

EMU = """mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
mc_enable 0x20
"""


def udp_bound(port: int) -> bool:
    """Whether a UDP socket is bound to 127.0.0.1:`port` (Linux's /proc/net/udp)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/udp") as table:
        return any(line.split()[1] == wanted for line in islice(table, 1, None))


class IpmiSimError(Exception):
    """ipmi_sim could not be started."""


def ipmi_sim_available() -> bool:
    return shutil.which(IPMI_SIM) is not None


class IpmiSimBmc:
    """One ipmi_sim process serving one node's BMC on a UDP loopback port."""

    def __init__(self, node: NodeSpec, port: int, admin_url: str, workdir: Path) -> None:
        self.node = node
        self.port = port
        self._admin_url = admin_url
        self._dir = workdir / f"ipmi_sim-{node.name}"
        self.process: subprocess.Popen[bytes] | None = None

    def _write_config(self) -> Path:
        self._dir.mkdir(parents=True, exist_ok=True)
        program = self._dir / "chassis_control"
        program.write_text(
            "#!/bin/sh\nexec " + shlex.join([sys.executable, "-m", "sitesim.bmc.chassis_control",
                                             "--url", self._admin_url, "--node", self.node.name])
            + ' "$@"\n')
        program.chmod(0o755)
        user, password = self.node.bmc.user, self.node.bmc.password
        lan = self._dir / "lan.conf"
        lan.write_text(
            f'name "{self.node.name}"\n'
            "set_working_mc 0x20\n"
            "  startlan 1\n"
            f"    addr 127.0.0.1 {self.port}\n"
            "    priv_limit admin\n"
            "    allowed_auths_callback none md2 md5 straight\n"
            "    allowed_auths_user none md2 md5 straight\n"
            "    allowed_auths_operator none md2 md5 straight\n"
            "    allowed_auths_admin none md2 md5 straight\n"
            f"    guid {uuid.uuid5(uuid.NAMESPACE_DNS, self.node.name).hex}\n"
            "  endlan\n"
            f'  chassis_control "{program} 0x20"\n'
            '  user 1 true  ""  ""  user 10 none md2 md5 straight\n'
            f'  user 2 true  "{user}" "{password}" admin 10 none md2 md5 straight\n')
        (self._dir / "bmc.emu").write_text(EMU)
        return lan

    def start(self) -> None:
        """Start ipmi_sim and wait until it listens; a process that exits first is started
        again (at most START_ATTEMPTS times in all) and then reported with its log's end."""
        lan = self._write_config()
        for attempt in range(1, START_ATTEMPTS + 1):
            log = open(self._dir / "ipmi_sim.log", "ab")  # noqa: SIM115 - the child keeps it
            try:
                self.process = subprocess.Popen(
                    [IPMI_SIM, "-c", str(lan), "-f", str(self._dir / "bmc.emu"),
                     "-s", str(self._dir / "state"), "-n"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            except OSError as exc:
                raise IpmiSimError(f"cannot start ipmi_sim for {self.node.name}: {exc}") from exc
            finally:
                log.close()
            if self._wait_bound():
                return
            if attempt < START_ATTEMPTS:
                time.sleep(0.2 * attempt)
        raise IpmiSimError(f"ipmi_sim for {self.node.name} exited {START_ATTEMPTS} times before "
                           f"listening on UDP port {self.port}; its log ends: {self._log_tail()}")

    def _wait_bound(self, timeout: float = 10.0) -> bool:
        """True once the port is bound (read from the kernel's table, never by binding it,
        which would take the port from ipmi_sim for that instant); False if it exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                return False
            if udp_bound(self.port):
                return True
            time.sleep(0.02)
        raise IpmiSimError(f"ipmi_sim for {self.node.name} did not bind port {self.port}")

    def _log_tail(self) -> str:
        try:
            return (self._dir / "ipmi_sim.log").read_text(errors="replace")[-500:].strip() \
                or "(empty)"
        except OSError as exc:
            return f"(unreadable: {exc})"

    def switch(self, running: bool) -> None:
        """Restart the process (same port and state) or kill it as a power cut would."""
        if running and self.process is None:
            self.start()
        elif not running and self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def stop(self) -> None:
        proc = self.process
        if proc is None:
            return
        terminate(proc, 5)
        self.process = None
