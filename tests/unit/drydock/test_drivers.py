"""Driver calls of prepare/deploy on recording fakes: MAAS requests, IPMI and Redfish calls."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
import requests
import sushy
from pyghmi import exceptions as ipmi_exc

from common.pyghmi_io import IoWatchdog
from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.maas.client import MaasClient
from drydock_api.drivers.ports import MaasError, OobError
from drydock_api.drivers.redfish.driver import RedfishDriver
from drydock_api.nodes.design import BmcAccess

MACHINE = {"system_id": "abc", "hostname": "n1", "status_name": "Ready",
           "boot_interface": {"mac_address": "52:54:00:00:00:01"}}
DEVICES = [{"id": 1, "name": "sda", "type": "physical", "size": 100, "filesystem": None,
            "partitions": [{"id": 7, "size": 50,
                            "filesystem": {"fstype": "ext4", "mount_point": "/"}}]},
           {"id": 9, "name": "vg0", "type": "virtual", "size": 5, "partitions": []}]


class Session:
    """A requests.Session that records calls and answers from a table of (method, path)."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, Any, Any]] = []

    def request(self, method: str, url: str, params: Any = None, data: Any = None,
                **_: Any) -> requests.Response:
        path = url.split("/api/2.0", 1)[1]
        self.calls.append((method, path, params, data))
        resp = requests.Response()
        answer = self.answers.get((method, path), {})
        resp.status_code = 200
        if isinstance(answer, tuple):
            resp.status_code, answer = answer
        resp._content = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        resp._content_consumed = True
        return resp


def client(answers: dict[tuple[str, str], Any]) -> tuple[MaasClient, Session]:
    session = Session(answers)
    return MaasClient("http://maas/MAAS", "c:t:s", session=session,  # type: ignore[arg-type]
                      retries=0), session


def test_the_machine_listing_is_decoded_as_it_arrives(monkeypatch):
    monkeypatch.setattr("drydock_api.drivers.maas.client.CHUNK", 7)  # many small pieces
    machines = [{**MACHINE, "system_id": f"s{i}", "hostname": f"n{i}", "power_state": "on"}
                for i in range(50)]
    maas, _ = client({("GET", "/machines/"): machines})
    listed = maas.list_machines()
    assert [(m.system_id, m.hostname, m.power_state) for m in listed] == [
        (f"s{i}", f"n{i}", "on") for i in range(50)]
    assert client({("GET", "/machines/"): b""})[0].list_machines() == []


@pytest.mark.parametrize("body", [json.dumps([MACHINE, MACHINE]).encode()[:-30], b"<html>"])
def test_a_listing_cut_short_or_not_json_is_a_transient_maas_error(body):
    maas, _ = client({("GET", "/machines/"): body})
    with pytest.raises(MaasError) as caught:
        maas.list_machines()
    assert caught.value.transient and "not whole JSON" in caught.value.message


def test_find_by_mac_and_rename():
    maas, session = client({("GET", "/machines/"): [MACHINE],
                            ("PUT", "/machines/abc/"): {**MACHINE, "hostname": "node01"}})
    assert maas.find_by_mac("52:54:00:00:00:01").mac == "52:54:00:00:00:01"
    assert maas.rename("abc", "node01").hostname == "node01"
    assert session.calls[0][2] == {"mac_address": "52:54:00:00:00:01"}
    assert session.calls[1][3] == {"hostname": "node01"}


def test_allocate_then_deploy_with_the_image():
    maas, session = client({("POST", "/machines/"): {**MACHINE, "status_name": "Allocated"},
                            ("POST", "/machines/abc/"): {**MACHINE,
                                                         "status_name": "Deploying"}})
    assert maas.allocate("abc").status_name == "Allocated"
    assert maas.deploy("abc", "jammy").status_name == "Deploying"
    assert session.calls[0][2:] == ({"op": "allocate"}, {"system_id": "abc"})
    assert session.calls[1][2:] == ({"op": "deploy"}, {"distro_series": "jammy"})


def test_block_devices_are_physical_disks_with_partitions():
    maas, _ = client({("GET", "/nodes/abc/blockdevices/"): DEVICES})
    (disk,) = maas.block_devices("abc")
    assert disk.name == "sda" and disk.partitions[0].mount_point == "/"


def test_partition_is_formatted_then_mounted():
    maas, session = client({})
    maas.format_partition("abc", 1, 7, "ext4", "/boot")
    ops = [(c[0], c[2]["op"], c[3]) for c in session.calls]
    assert ops == [("POST", "format", {"fstype": "ext4"}),
                   ("POST", "mount", {"mount_point": "/boot"})]


def test_maas_refusal_keeps_its_message():
    maas, _ = client({("POST", "/tags/"): (400, {"name": ["Tag already exists."]})})
    with pytest.raises(MaasError, match="Tag already exists"):
        maas.create_tag("compute", "")


class FakeCommand:
    calls: list[tuple[str, Any]] = []

    def __init__(self, **_: Any) -> None:
        pass

    def set_power(self, state: str, wait: bool = False) -> dict[str, str]:
        self.calls.append(("set_power", (state, wait)))
        return {"powerstate": state}

    def set_bootdev(self, dev: str, persist: bool = False) -> None:
        self.calls.append(("set_bootdev", (dev, persist)))


BMC = BmcAccess(type="ipmi", address="127.0.0.1", port=623, account="a", credential="pw")


def test_the_ipmi_session_socket_never_blocks():
    """pyghmi sets its shared socket blocking to send; its IO thread reading it then would block
    every IPMI call of the process (see common.udpsocket)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    class Session:
        socket = sock

    class WithSession(FakeCommand):
        ipmi_session = Session()

    try:
        IpmiDriver(factory=WithSession).power_on(BMC)
        sock.setblocking(True)  # as pyghmi's _io_sendto does
        assert not sock.getblocking()
    finally:
        sock.close()


def test_ipmi_pxe_boot_override_is_one_time_and_cycle_boots():
    FakeCommand.calls = []
    driver = IpmiDriver(factory=FakeCommand)
    driver.set_pxe_boot(BMC)
    driver.power_cycle(BMC)
    driver.power_on(BMC)
    assert FakeCommand.calls == [("set_bootdev", ("network", False)),
                                 ("set_power", ("boot", False)), ("set_power", ("on", False))]


@pytest.mark.parametrize(("raised", "expected"), [
    (ipmi_exc.IpmiException(None), "IPMI BMC ipmi 127.0.0.1:623 did not answer power state"),
    (ipmi_exc.IpmiException("timeout"), "IPMI BMC ipmi 127.0.0.1:623 did not answer power state"),
    (ipmi_exc.IpmiException("Insufficient privilege"),
     "IPMI BMC ipmi 127.0.0.1:623 failed power state: Insufficient privilege")])
def test_ipmi_failures_never_say_none(raised: Exception, expected: str) -> None:
    class Dead(FakeCommand):
        def get_power(self) -> dict[str, str]:
            raise raised

    with pytest.raises(OobError) as err:
        IpmiDriver(factory=Dead).power_state(BMC)
    assert err.value.message == expected and err.value.transient


class FakeSystem:
    def __init__(self, power: str) -> None:
        self.power_state = power
        self.calls: list[Any] = []

    def reset_system(self, value: Any) -> None:
        self.calls.append(("reset", value))

    def set_system_boot_options(self, **kwargs: Any) -> None:
        self.calls.append(("boot", kwargs))


class FakeRoot:
    def __init__(self, system: FakeSystem) -> None:
        self.system = system

    def get_system(self, path: str) -> FakeSystem:
        return self.system


@pytest.mark.parametrize("power,reset", [(sushy.POWER_STATE_OFF, sushy.RESET_ON),
                                         (sushy.POWER_STATE_ON, sushy.RESET_FORCE_RESTART)])
def test_redfish_cycle_powers_on_or_restarts(power, reset):
    system = FakeSystem(power)
    driver = RedfishDriver(factory=lambda *a, **k: FakeRoot(system))
    bmc = BmcAccess(type="redfish", address="127.0.0.1", port=8000, account="a",
                    credential="pw", system_id="sys-1")
    driver.set_pxe_boot(bmc)
    driver.power_cycle(bmc)
    assert system.calls == [("boot", {"target": sushy.BOOT_SOURCE_TARGET_PXE,
                                      "enabled": sushy.BOOT_SOURCE_ENABLED_ONCE}),
                            ("reset", reset)]


def test_ipmi_calls_start_the_process_s_pyghmi_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[bool] = []
    monkeypatch.setattr(IoWatchdog, "ensure", classmethod(lambda cls: started.append(True)))
    driver = IpmiDriver(factory=FakeCommand)
    assert not started
    driver.power_on(BMC)
    assert started
