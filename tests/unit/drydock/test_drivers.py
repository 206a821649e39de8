"""Driver calls of prepare/deploy on recording fakes: MAAS requests, IPMI and Redfish calls."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import requests
import sushy

from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.maas.client import MaasClient
from drydock_api.drivers.ports import BmcAccess, MaasError, OobError
from drydock_api.drivers.redfish.driver import RedfishDriver

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


class FakeIpmitool:
    """subprocess.run for ipmitool: records each command line and environment, answers from
    a list of (returncode, stdout, stderr)."""

    def __init__(self, *answers: tuple[int, str, str]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[list[str], dict[str, str]]] = []

    def __call__(self, argv: list[str], *, env: dict[str, str], **_: Any) -> Any:
        self.calls.append((argv, env))
        code, out, err = self.answers.pop(0) if self.answers else (0, "", "")
        return subprocess.CompletedProcess(argv, code, out, err)

    def commands(self) -> list[str]:
        return [" ".join(argv[argv.index("-N") + 2:]) for argv, _ in self.calls]


BMC = BmcAccess(type="ipmi", address="127.0.0.1", port=623, account="a", credential="pw")
NO_SESSION = "Get Auth Capabilities error\nError: Unable to establish IPMI v2 / RMCP+ session\n"


def test_ipmi_password_is_in_the_environment_never_on_the_command_line():
    run = FakeIpmitool((0, "Chassis Power is on\n", ""))
    assert IpmiDriver(run=run).power_state(BMC) == "on"
    argv, env = run.calls[0]
    assert "pw" not in argv and env["IPMI_PASSWORD"] == "pw"
    assert argv[:11] == ["ipmitool", "-v", "-I", "lanplus", "-H", "127.0.0.1", "-p", "623",
                         "-U", "a", "-E"]


def test_ipmi_pxe_boot_override_is_one_time_and_cycle_boots():
    run = FakeIpmitool((0, "", ""), (0, "Chassis Power is off\n", ""), (0, "", ""),
                       (0, "Chassis Power is on\n", ""), (0, "", ""), (0, "", ""))
    driver = IpmiDriver(run=run)
    driver.set_pxe_boot(BMC)
    driver.power_cycle(BMC)  # off: on
    driver.power_cycle(BMC)  # on: reset
    driver.power_on(BMC)
    assert run.commands() == ["chassis bootdev pxe", "chassis power status", "chassis power on",
                              "chassis power status", "chassis power reset",
                              "chassis power on"]


@pytest.mark.parametrize(("stderr", "expected", "transient"), [
    ("", "IPMI BMC ipmi 127.0.0.1:623 did not answer power state", True),
    (NO_SESSION, "IPMI BMC ipmi 127.0.0.1:623 did not answer power state", True),
    ("> RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session\n",
     "IPMI BMC ipmi 127.0.0.1:623 refused the credentials for power state "
     "(> RAKP 2 HMAC is invalid)", False),
    ("Error: Insufficient privilege level\n",
     "IPMI BMC ipmi 127.0.0.1:623 refused the credentials for power state "
     "(Error: Insufficient privilege level)", False),
    ("Invalid completion code received: Node busy\n",
     "IPMI BMC ipmi 127.0.0.1:623 failed power state: "
     "Invalid completion code received: Node busy", True)])
def test_ipmi_failures_say_what_happened(stderr: str, expected: str, transient: bool) -> None:
    with pytest.raises(OobError) as err:
        IpmiDriver(run=FakeIpmitool(*[(1, "", stderr)] * 3)).power_state(BMC)
    assert err.value.message == expected and err.value.transient is transient


def test_ipmi_reruns_a_lost_call_but_never_resends_a_reset():
    run = FakeIpmitool((1, "", NO_SESSION), (0, "", ""))
    IpmiDriver(run=run).power_off(BMC, graceful=False)
    assert run.commands() == ["chassis power off", "chassis power off"]
    lost = "Unable to set Chassis Power Control to Reset\n"
    reset = FakeIpmitool((0, "Chassis Power is on\n", ""), (1, "", lost), (0, "", ""))
    with pytest.raises(OobError, match="failed power cycle: Unable to set"):
        IpmiDriver(run=reset).power_cycle(BMC)
    assert reset.commands() == ["chassis power status", "chassis power reset"]
    refused = FakeIpmitool((1, "", "> RAKP 2 HMAC is invalid\n" + NO_SESSION))
    with pytest.raises(OobError, match="refused the credentials"):
        IpmiDriver(run=refused).power_off(BMC, graceful=True)
    assert refused.commands() == ["chassis power soft"]


def test_ipmi_a_command_answered_before_its_session_failed_to_close_is_done():
    run = FakeIpmitool((1, "Chassis Power Control: Down/Off\n", "Close Session command failed\n"))
    IpmiDriver(run=run).power_off(BMC, graceful=False)
    assert run.commands() == ["chassis power off"]


def test_ipmi_a_call_past_its_timeout_is_a_transient_error():
    def hung(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    with pytest.raises(OobError) as err:
        IpmiDriver(run=hung, timeout=5).power_on(BMC)
    assert err.value.transient and "did not answer power on within 5 s" in err.value.message


def test_ipmi_without_ipmitool_says_so():
    with pytest.raises(OobError, match="needs no-such-ipmitool, which is not installed"):
        IpmiDriver(binary="no-such-ipmitool").power_state(BMC)


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
