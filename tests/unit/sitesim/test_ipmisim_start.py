"""An ipmi_sim BMC starts listening or says why not: its readiness is read from the kernel's
UDP table (never by binding its port, which would take the port from ipmi_sim for that
instant), and a process that exits before listening is started again, then reported with the
end of its log (the site's directory, and the log, are gone once the site stops)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from sitesim.bmc import ipmisim
from sitesim.bmc.ipmisim import IpmiSimBmc, IpmiSimError, udp_bound
from sitesim.ports import free_port
from sitesim.siteconfig import BmcSpec, NodeSpec

NODE = NodeSpec(name="n1", rack="r1", tags=(), labels={}, control_plane=False, profile="p",
                bmc=BmcSpec(type="ipmi", impl="ipmi_sim", user="admin", password="secret"),
                disks=(), state="deployed", mac="52:54:00:00:00:01", address="10.0.0.1")


def wrapper(tmp_path: Path, body: str) -> str:
    """An executable standing in for ipmi_sim."""
    path = tmp_path / "ipmi_sim-wrapper"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_bound_udp_port_is_seen_in_the_kernels_table() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert udp_bound(port)
    assert not udp_bound(port)


def test_an_ipmi_sim_that_exits_at_once_is_started_again_and_listens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which("ipmi_sim")
    assert real, "ipmi_sim is installed by `make` (Debian openipmi)"
    marker = tmp_path / "failed-once"
    monkeypatch.setattr(ipmisim, "IPMI_SIM", wrapper(tmp_path, (
        f'if [ ! -e {marker} ]; then touch {marker}; echo "bind: in use" >&2; exit 1; fi\n'
        f'exec {real} "$@"')))
    bmc = IpmiSimBmc(NODE, free_port(socket.SOCK_DGRAM), "http://127.0.0.1:9", tmp_path)
    try:
        bmc.start()
        assert marker.exists() and bmc.process is not None and bmc.process.poll() is None
        assert udp_bound(bmc.port)
    finally:
        bmc.stop()


def test_an_ipmi_sim_that_keeps_exiting_is_reported_with_its_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ipmisim, "IPMI_SIM",
                        wrapper(tmp_path, 'echo "Unable to bind: Address in use" >&2; exit 1'))
    bmc = IpmiSimBmc(NODE, free_port(socket.SOCK_DGRAM), "http://127.0.0.1:9", tmp_path)
    with pytest.raises(IpmiSimError) as caught:
        bmc.start()
    assert "exited 3 times" in str(caught.value)
    assert "Unable to bind: Address in use" in str(caught.value)
