"""An Ironic site's machines booting what Ironic deployed: the host reads the iPXE script Ironic
wrote for its MAC and, on its kernel command line, the boot action key and user data Drydock
handed over, then joins as a host deployed by MAAS does (sitesim.firstboot)."""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

from sitesim.firstboot import HostAgent, handed_over
from sitesim.model import SiteModel

LOG = logging.getLogger(__name__)
PXE_DIR = "pxelinux.cfg"  # Ironic's per-MAC iPXE scripts under [deploy] http_root


def kernel_arguments(script: str) -> dict[str, str]:
    """`key=value` words of the `kernel` lines of an iPXE script."""
    out: dict[str, str] = {}
    for line in script.splitlines():
        words = line.split()
        if words and words[0] == "kernel":
            for word in words[1:]:
                key, sep, value = word.partition("=")
                if sep:
                    out[key] = value
    return out


class IronicHosts:
    """Power-on listener: a machine powered on with an iPXE script from Ironic (the ramdisk
    deploy) boots it once per script: the key and API found there start its first boot."""

    def __init__(self, model: SiteModel, http_root: Path, macs: dict[str, str]) -> None:
        self._model, self._root, self._macs = model, http_root, dict(macs)
        self.host = HostAgent(model)
        self._booted: dict[str, str] = {}  # node → digest of the script it booted last
        self._lock = threading.Lock()

    def script(self, name: str) -> str | None:
        mac = self._macs.get(name)
        path = self._root / PXE_DIR / (mac or "").replace(":", "-").lower()
        try:
            return path.read_text() if mac else None
        except OSError:
            return None

    def on_power(self, name: str, on: bool) -> None:
        if not on:
            return
        script = self.script(name)
        if script is None:
            return
        digest = hashlib.sha256(script.encode()).hexdigest()
        with self._lock:
            if self._booted.get(name) == digest:
                return  # the same deploy booted again: the host has joined already
            self._booted[name] = digest
        args = kernel_arguments(script)
        tags = [t for t in args.get("berth.tags", "").split(",") if t]
        handed = handed_over(tags, args.get("berth.user_data", ""), name)
        self._model.record_call("host", "ipxe_boot", name)
        if handed is None:
            LOG.info("%s booted Ironic's iPXE script without boot actions", name)
            return
        self.host.boot(name, *handed)
