"""IPMI BMCs served by OpenIPMI's ipmi_sim, whose chassis_control program calls the admin API."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from sitesim.processes import terminate
from sitesim.siteconfig import NodeSpec

IPMI_SIM = "ipmi_sim"

EMU = """mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
mc_enable 0x20
"""


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
        lan = self._write_config()
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
        self._wait_bound()

    def _wait_bound(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise IpmiSimError(f"ipmi_sim for {self.node.name} exited; see {self._dir}")
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                try:
                    probe.bind(("127.0.0.1", self.port))
                except OSError:
                    return  # the port is taken: ipmi_sim listens
            time.sleep(0.02)
        raise IpmiSimError(f"ipmi_sim for {self.node.name} did not bind port {self.port}")

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
