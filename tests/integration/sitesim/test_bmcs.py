"""Redfish (sushy against the sushy-tools emulator) and IPMI (ipmitool, pyghmi) BMCs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
import requests
import sushy

from tests.integration.sitesim.conftest import calls, node, wait_for


def _system(site, name):
    spec = site.spec.node(name)
    client = sushy.Sushy(site.urls["redfish"] + "/redfish/v1",
                         username=spec.bmc.user, password=spec.bmc.password)
    return client.get_system("/redfish/v1/Systems/" + node(site, name)["bmc"]["system_id"])


def test_sushy_power_off_and_on_follow_the_site(sitesim_site):
    system = _system(sitesim_site, "node02")
    assert system.power_state == sushy.PowerState.ON
    system.reset_system(sushy.ResetType.FORCE_OFF)
    wait_for(lambda: node(sitesim_site, "node02")["power"] == "off")
    system.refresh()
    assert system.power_state == sushy.PowerState.OFF
    wait_for(lambda: not node(sitesim_site, "node02")["kubernetes"]["ready"])
    system.reset_system(sushy.ResetType.ON)
    wait_for(lambda: node(sitesim_site, "node02")["power"] == "on")
    wait_for(lambda: node(sitesim_site, "node02")["kubernetes"]["ready"])
    assert calls(sitesim_site, system="redfish", op="power_off", node="node02") == 1
    assert calls(sitesim_site, system="redfish", op="power_on", node="node02") == 1


def test_boot_override_is_recorded(sitesim_site):
    system = _system(sitesim_site, "node02")
    system.set_system_boot_options(sushy.BootSource.PXE,
                                   enabled=sushy.BootSourceOverrideEnabled.ONCE)
    system.refresh()
    assert system.boot.target == sushy.BootSource.PXE
    assert node(sitesim_site, "node02")["bmc"]["boot_device"] == "pxe"
    assert calls(sitesim_site, system="redfish", op="set_boot", node="node02") >= 1


def _task_state(site, location, auth):
    return requests.get(site.urls["redfish"] + location, auth=auth, timeout=10).json()


def test_secure_erase_runs_as_a_bmc_task_and_wipes_only_that_drive(sitesim_site):
    system = _system(sitesim_site, "node01")
    drive = next(d for d in system.storage.get_members()[0].drives if d.identity == "sdb")
    target = drive.json["Actions"]["#Drive.SecureErase"]["target"]
    spec = sitesim_site.spec.node("node01")
    auth = (spec.bmc.user, spec.bmc.password)
    reply = requests.post(sitesim_site.urls["redfish"] + target, json={}, timeout=10, auth=auth)
    assert reply.status_code == 202
    location = reply.headers["Location"]
    assert reply.json()["TaskState"] == "Running"
    deadline = time.monotonic() + 30
    while _task_state(sitesim_site, location, auth)["TaskState"] == "Running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert _task_state(sitesim_site, location, auth)["TaskState"] == "Completed"
    disks = node(sitesim_site, "node01")["disks"]
    assert disks["sdb"] == {"marker": None, "wiped": True,
                            "wiped_by": "redfish Drive.SecureErase"}
    assert disks["sda"]["marker"] and not disks["sda"]["wiped"]
    assert calls(sitesim_site, system="redfish", op="secure_erase", node="node01") == 1


def test_erase_fault_fails_and_keeps_the_marker(sitesim_site, clean_faults):
    admin = sitesim_site.urls["sitesim"]
    requests.post(admin + "/faults", json={"node": "node01", "operation": "bmc.erase",
                                           "effect": "fail"}, timeout=10)
    system = _system(sitesim_site, "node01")
    spec = sitesim_site.spec.node("node01")
    url = f"{sitesim_site.urls['redfish']}{system.path}/Storage/1/Drives/sda/Actions/" \
          "Drive.SecureErase"
    auth = (spec.bmc.user, spec.bmc.password)
    reply = requests.post(url, json={}, auth=auth, timeout=10)
    assert reply.status_code == 202
    deadline = time.monotonic() + 30
    while (task := _task_state(sitesim_site, reply.headers["Location"], auth))[
            "TaskState"] == "Running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert task["TaskState"] == "Exception" and "failed" in task["Messages"][0]["Message"]
    assert node(sitesim_site, "node01")["disks"]["sda"]["marker"]


def test_power_fault_fails_the_reset(sitesim_site, clean_faults):
    requests.post(sitesim_site.urls["sitesim"] + "/faults", timeout=10,
                  json={"node": "node02", "operation": "bmc.power", "effect": "fail"})
    system = _system(sitesim_site, "node02")
    with pytest.raises(sushy.exceptions.ServerSideError):
        system.reset_system(sushy.ResetType.FORCE_OFF)
    assert node(sitesim_site, "node02")["power"] == "on"


def test_wrong_redfish_password_is_refused(sitesim_site):
    uid = node(sitesim_site, "node01")["bmc"]["system_id"]
    reply = requests.get(f"{sitesim_site.urls['redfish']}/redfish/v1/Systems/{uid}",
                         auth=("admin", "wrong"), timeout=10)
    assert reply.status_code == 401


def ipmitool(site, name, *args):
    spec = site.spec.node(name)
    port = site.ipmi_ports[name]
    return subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p",
                           str(port), "-U", spec.bmc.user, "-P", spec.bmc.password, *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("ipmitool") is None, reason="ipmitool is not installed")
@pytest.mark.parametrize("name", ["node03", "node06"])  # ipmi_sim and pyghmi
def test_ipmitool_power_agrees_with_the_site(sitesim_site, name):
    assert "Chassis Power is on" in ipmitool(sitesim_site, name, "power", "status").stdout
    assert ipmitool(sitesim_site, name, "power", "off").returncode == 0
    wait_for(lambda: node(sitesim_site, name)["power"] == "off")
    assert "Chassis Power is off" in ipmitool(sitesim_site, name, "power", "status").stdout
    assert ipmitool(sitesim_site, name, "chassis", "bootdev", "pxe").returncode == 0
    assert node(sitesim_site, name)["bmc"]["boot_device"] == "pxe"
    assert ipmitool(sitesim_site, name, "power", "on").returncode == 0
    wait_for(lambda: node(sitesim_site, name)["power"] == "on")
    assert calls(sitesim_site, system="ipmi", op="power_off", node=name) >= 1
    assert calls(sitesim_site, system="ipmi", op="set_boot", node=name) >= 1


PYGHMI_CLIENT = textwrap.dedent("""
    import json, sys, time
    from pyghmi.ipmi import command
    port, user, password, action = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    cmd = command.Command(bmc="127.0.0.1", port=port, userid=user, password=password)
    before = cmd.get_power()["powerstate"]
    cmd.set_power(action, wait=False)
    print(json.dumps({"before": before}))
""")


@pytest.mark.parametrize("name", ["node06", "node03"])
def test_pyghmi_client_power_off_and_on(sitesim_site, name):
    spec = sitesim_site.spec.node(name)

    def run(action):
        out = subprocess.run([sys.executable, "-c", PYGHMI_CLIENT,
                              str(sitesim_site.ipmi_ports[name]), spec.bmc.user,
                              spec.bmc.password, action],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    wait_for(lambda: node(sitesim_site, name)["power"] == "on")
    assert run("off") == {"before": "on"}
    wait_for(lambda: node(sitesim_site, name)["power"] == "off")
    assert run("on") == {"before": "off"}
    wait_for(lambda: node(sitesim_site, name)["power"] == "on")


@pytest.mark.skipif(shutil.which("ipmitool") is None, reason="ipmitool is not installed")
def test_ipmi_power_fault_fails_the_command(sitesim_site, clean_faults):
    requests.post(sitesim_site.urls["sitesim"] + "/faults", timeout=10,
                  json={"node": "node06", "operation": "bmc.power", "effect": "fail"})
    assert ipmitool(sitesim_site, "node06", "power", "off").returncode != 0
    assert node(sitesim_site, "node06")["power"] == "on"


def _set_bmc(site, name, running):
    return requests.put(f"{site.urls['sitesim']}/nodes/{name}/bmc", json={"running": running},
                        timeout=30)


@pytest.mark.skipif(shutil.which("ipmitool") is None, reason="ipmitool is not installed")
def test_killed_ipmi_sim_bmc_stops_answering_until_restarted(sitesim_site):
    sim = next(s for s in sitesim_site.ipmi_sims if s.node.name == "node03")
    old_pid = sim.process.pid
    assert _set_bmc(sitesim_site, "node03", False).json() == {"running": False}
    try:
        assert sim.process is None  # the ipmi_sim process was killed
        dead = ipmitool(sitesim_site, "node03", "-R", "1", "-N", "1", "power", "status")
        assert dead.returncode != 0
        assert node(sitesim_site, "node03")["bmc"]["running"] is False
    finally:
        assert _set_bmc(sitesim_site, "node03", True).json() == {"running": True}
    assert sim.process.pid != old_pid
    assert "Chassis Power is on" in ipmitool(sitesim_site, "node03", "power", "status").stdout


def test_killed_redfish_bmc_answers_nothing_for_its_system_only(sitesim_site):
    assert _set_bmc(sitesim_site, "node04", False).status_code == 200
    try:
        spec = sitesim_site.spec.node("node04")
        with pytest.raises(requests.exceptions.Timeout):
            requests.get(sitesim_site.urls["redfish"] + "/redfish/v1/Systems/"
                         + node(sitesim_site, "node04")["bmc"]["system_id"],
                         auth=(spec.bmc.user, spec.bmc.password), timeout=0.5)
        assert _system(sitesim_site, "node01").power_state == sushy.POWER_STATE_ON
    finally:
        _set_bmc(sitesim_site, "node04", True)
    assert _system(sitesim_site, "node04").power_state == sushy.POWER_STATE_ON


def test_pyghmi_bmc_cannot_be_killed_alone(sitesim_site):
    resp = _set_bmc(sitesim_site, "node06", False)
    assert resp.status_code == 400 and "pyghmi" in resp.text
    assert node(sitesim_site, "node06")["bmc"]["running"] is True
