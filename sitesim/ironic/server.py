"""A real OpenStack Ironic for a site: its own venv (install.sh), a standalone configuration
(no Keystone, no message bus, SQLite) and the single-process `ironic` command on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from sitesim.ports import free_port

HERE = Path(__file__).resolve().parent
INSTALL = HERE / "install.sh"
API_VERSION = "1.61"  # retired / retired_reason (the newest Drydock relies on)

# The interfaces each node gets (Drydock sets them at enrollment) and why:
# - power/management: the node's real BMC (redfish against sushy-tools, ipmitool against the
#   IPMI BMC), so every power action reaches the site's simulated machines;
# - boot `fake`, deploy `fake` on the `fake-hardware` type would hide the BMC: instead the
#   redfish/ipmi types keep their own power and management and use `ipxe` boot with the
#   `ramdisk` deploy, which needs no Ironic Python Agent (it writes the iPXE config and powers
#   the node on; the kernel and ramdisk are files on this machine);
# - inspect `redfish` on redfish nodes (out of band: CPU, memory and the drives the BMC's
#   Storage lists, kept as the node's inventory), `no-inspect` on ipmi nodes;
# - network/raid/... `noop`/`no-*`: there is no Neutron, no RAID.
ENABLED = {
    "hardware_types": "redfish,ipmi,fake-hardware",
    "power_interfaces": "redfish,ipmitool,fake",
    "management_interfaces": "redfish,ipmitool,fake,noop",
    "boot_interfaces": "ipxe,fake",
    "deploy_interfaces": "ramdisk,fake",
    "inspect_interfaces": "redfish,no-inspect",
    "network_interfaces": "noop",
    "raid_interfaces": "no-raid",
    "rescue_interfaces": "no-rescue",
    "bios_interfaces": "no-bios",
    "console_interfaces": "no-console",
    "vendor_interfaces": "no-vendor",
    "firmware_interfaces": "no-firmware",
    "storage_interfaces": "noop",
}


class IronicMissing(RuntimeError):
    """Ironic's venv is not installed (run `make ironic`)."""


def ironic_bin(*, install: bool = False) -> Path:
    """The bin directory of Ironic's venv; installs it first when `install` (slow cold)."""
    args = [str(INSTALL)] if install else [str(INSTALL), "--check"]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise IronicMissing(f"Ironic is not installed in {lines[-1] if lines else '?'} "
                            f"(run `make ironic`): {done.stderr.strip()[-300:]}")
    return Path(lines[-1])


def render_conf(workdir: Path, port: int) -> str:
    """ironic.conf for a standalone Ironic answering on 127.0.0.1:`port`."""
    images = workdir / "images"
    enabled = "\n".join(f"enabled_{k} = {v}" for k, v in ENABLED.items())
    return f"""[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = berth-ironic
log_file = {workdir / 'ironic.log'}
use_stderr = false
debug = false
{enabled}
default_network_interface = noop
default_inspect_interface = no-inspect

[api]
host_ip = 127.0.0.1
port = {port}

[database]
connection = sqlite:///{workdir / 'ironic.sqlite'}

[conductor]
heartbeat_interval = 2
sync_power_state_interval = 5
power_state_change_timeout = 10
soft_power_off_timeout = 30
deploy_callback_timeout = 60
clean_callback_timeout = 60
file_url_allowed_paths = {images}
automated_clean = true

[dhcp]
dhcp_provider = none

[pxe]
tftp_root = {workdir / 'tftp'}
tftp_master_path = {workdir / 'tftp' / 'master'}
images_path = {workdir / 'pxe-images'}
instance_master_path = {workdir / 'pxe-master'}

[deploy]
http_root = {workdir / 'http'}
http_url = http://127.0.0.1:1/ipxe

# Ironic runs each ipmitool with one try and a 1 s reply timeout (-R 1 -N 1) and retries any
# failure until command_retry_timeout (its default, 60 s). An ipmi_sim BMC starts a program
# for each power read, so on a loaded machine reads fail for seconds on end ("Unable to get
# Chassis Power Status"): 10 s of retries was not always enough.
[ipmi]
min_command_interval = 1
command_retry_timeout = 60

[redfish]
connection_attempts = 2
connection_retry_interval = 1

[inspector]
# Redfish inspection cannot tell which NIC boots from the network: without this, its `ports`
# hook marks every port pxe_enabled false, and Ironic links no iPXE script to the boot MAC.
update_pxe_enabled = false

[oslo_concurrency]
lock_path = {workdir / 'locks'}
"""


@dataclass
class IronicServer:
    """One Ironic process: `start()` writes the configuration, creates the schema and waits
    until the API answers; `stop()` ends it by PID."""

    workdir: Path
    port: int = 0
    startup_timeout: float = 180.0  # a guard against hangs: a loaded machine starts it slowly
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def conf_file(self) -> Path:
        return self.workdir / "ironic.conf"

    @property
    def images(self) -> Path:
        """Where boot files Ironic may read (file:// URLs) live."""
        return self.workdir / "images"

    def start(self) -> IronicServer:
        bindir = ironic_bin()
        self.port = self.port or free_port()
        for sub in ("images", "tftp/master", "http", "pxe-images", "pxe-master", "locks"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        for name in ("kernel", "ramdisk"):  # the ramdisk deploy's boot files (never booted)
            (self.images / name).write_bytes(b"berth-sim-" + name.encode())
        self.conf_file.write_text(render_conf(self.workdir, self.port))
        subprocess.run([str(bindir / "ironic-dbsync"), "--config-file", str(self.conf_file),
                        "create_schema"], check=True, capture_output=True, timeout=120)
        log = (self.workdir / "ironic.stdout").open("wb")
        self.process = subprocess.Popen(
            [str(bindir / "ironic"), "--config-file", str(self.conf_file)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"ironic exited ({self.process.returncode}); see "
                                   f"{self.workdir / 'ironic.log'}")
            try:
                if requests.get(f"{self.url}/v1/drivers", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"ironic did not answer on {self.url} in {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            # The conductor stops at once, but the process lives on while a power sync already
            # running retries a BMC the site has stopped (sushy: 3 s apart, up to 10 times);
            # nothing of a simulated site's Ironic (SQLite in its workdir) needs that.
            process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def __enter__(self) -> IronicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
