"""--port-offset moves every fixed port of `berth up`; a held port is traced to its process."""

from __future__ import annotations

import os
import socket

import pytest

from berth_launcher.ports import PortError, PortLayout, port_free, port_holders, taken_ports


def test_offset_moves_every_port():
    default, moved = PortLayout(0, postgres=True, ipmi_count=2), \
        PortLayout(100, postgres=True, ipmi_count=2)
    assert default.tcp() == {"shipyard": 9000, "promenade": 9001, "drydock": 9002,
                             "sitesim admin API": 7000, "Kubernetes API": 6443, "MAAS": 5240,
                             "Redfish": 8000, "shipyard-2": 9010, "drydock-2": 9012,
                             "PostgreSQL": 5433}
    assert default.udp() == {"IPMI BMC 1": 6230, "IPMI BMC 2": 6231}
    assert moved.tcp() == {name: port + 100 for name, port in default.tcp().items()}
    assert moved.udp() == {name: port + 100 for name, port in default.udp().items()}
    assert moved.site.ipmi_base == 6330 and moved.postgres_port == 5533


def test_without_postgres_its_ports_are_not_needed():
    assert "PostgreSQL" not in PortLayout(0).tcp() and "shipyard-2" not in PortLayout(0).tcp()


@pytest.mark.parametrize("offset", [-5000, 57000])
def test_an_offset_out_of_the_port_range_is_refused(offset):
    with pytest.raises(PortError, match="outside 1024-65535"):
        PortLayout(offset).check_range()


def test_a_listening_port_is_traced_to_this_process():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert not port_free(port)
        holders = port_holders(port)
        assert [pid for pid, _ in holders] == [os.getpid()]
        offset = port - 9001  # promenade's port
        problems = taken_ports(PortLayout(offset))
    assert any(p.startswith(f"port {port}/tcp (promenade) is taken by pid {os.getpid()} (")
               for p in problems)
    assert port_free(port)
