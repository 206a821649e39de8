"""Drydock's Ironic client against a real Ironic and the site's real BMCs (sushy-tools Redfish,
OpenIPMI's ipmi_sim): enrollment from the design, the provision state machine, soft and hard
power observed at the BMC, retirement by Ironic's rules, NodeLocked retries and failures
surfaced with Ironic's last_error."""

from __future__ import annotations

import contextlib
import dataclasses
import threading

import pytest

from drydock_api.drivers.ironic.client import (
    IronicClient,
    IronicRefused,
    IronicStateError,
)
from sitesim.ironic.enroll import VERIFY_ATTEMPTS, IronicEnroller
from sitesim.ironic.server import IronicServer
from sitesim.site import Site
from sitesim.siteconfig import BmcSpec, NodeSpec
from tests.integration.ironic.conftest import (
    bmc_calls,
    clear_faults,
    design_node,
    enroll,
    fault,
    site_power,
)

# openstacksdk warns of its own deprecations on every attribute read
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_enroll_from_the_design_then_manage_provide_deploy_undeploy(
        client: IronicClient, site: Site) -> None:
    enroll(client, site, "node04")
    node = client.get("node04")
    assert (node.provision_state, node.driver) == ("enroll", "redfish")
    assert client.manage("node04").provision_state == "manageable"  # Ironic verified the BMC
    assert client.provide("node04").provision_state == "available"
    client.power("node04", "power off")
    assert site_power(site, "node04") == "off"
    deployed = client.deploy("node04")
    assert (deployed.provision_state, deployed.power_state) == ("active", "power on")
    assert site_power(site, "node04") == "on"  # the ramdisk deploy powered it on at the BMC
    with pytest.raises(IronicRefused, match="erase_devices is a clean step of the Ironic Python"):
        client.undeploy("node04")  # full erase by default: this node has no agent ramdisk
    assert client.get("node04").provision_state == "active"  # refused: nothing changed
    done = client.undeploy("node04", erase=None)
    assert (done.provision_state, done.power_state) == ("available", "power off")
    assert site_power(site, "node04") == "off"


@pytest.mark.parametrize(("name", "system"), [("node01", "redfish"), ("node03", "ipmi")])
def test_soft_and_hard_power_off_reach_the_bmc(client: IronicClient, site: Site, name: str,
                                               system: str) -> None:
    enroll(client, site, name)
    client.manage(name)
    client.power(name, "power on")
    assert site_power(site, name) == "on"
    graceful = bmc_calls(site, system, "graceful_shutdown", name)
    forced = bmc_calls(site, system, "power_off", name)
    assert client.power(name, "soft power off").power_state == "power off"
    assert site_power(site, name) == "off"
    assert bmc_calls(site, system, "graceful_shutdown", name) == graceful + 1
    assert bmc_calls(site, system, "power_off", name) == forced  # soft: no forced off
    client.power(name, "power on")
    assert client.power(name, "power off").power_state == "power off"
    assert bmc_calls(site, system, "power_off", name) >= forced + 1
    assert bmc_calls(site, system, "graceful_shutdown", name) == graceful + 1
    assert client.power(name, "rebooting").power_state == "power on"
    assert site_power(site, name) == "on"


def test_ignored_soft_power_off_fails_with_ironics_last_error(client: IronicClient,
                                                              site: Site) -> None:
    enroll(client, site, "node02")
    client.manage("node02")
    client.power("node02", "power on")
    fault(site, "node02", "bmc.graceful_shutdown", "ignore")
    try:
        with pytest.raises(IronicStateError, match="power 'power off' not reached") as caught:
            client.power("node02", "soft power off", timeout=3)
        assert "Failed to change power state" in str(caught.value)  # Ironic's last_error
        assert site_power(site, "node02") == "on"
        assert client.get("node02").last_error  # Ironic's own account, kept on the node
    finally:
        clear_faults(site)


def test_a_deploy_failure_is_surfaced_with_ironics_last_error(client: IronicClient,
                                                              site: Site) -> None:
    enroll(client, site, "node05")
    client.provide("node05")
    fault(site, "node05", "bmc.power", "fail")
    try:
        with pytest.raises(IronicStateError, match="deploy failed") as caught:
            client.deploy("node05")
        assert "last_error" in str(caught.value)
        assert client.get("node05").provision_state == "deploy failed"
    finally:
        clear_faults(site)
    client.undeploy("node05", erase=None)
    assert client.get("node05").provision_state == "available"


def test_retirement_follows_ironics_rules(client: IronicClient, site: Site) -> None:
    enroll(client, site, "node06")
    client.provide("node06")
    with pytest.raises(IronicRefused, match="409"):
        client.retire("node06", "failing DIMM")  # Ironic refuses to retire an available node
    client.manage("node06")
    retired = client.retire("node06", "failing DIMM")
    assert (retired.retired, retired.retired_reason) == (True, "failing DIMM")
    with pytest.raises(IronicRefused, match="retired"):
        client.provide("node06")
    assert client.get("node06").provision_state == "manageable"
    unretired = client.unretire("node06")
    assert (unretired.retired, unretired.retired_reason) == (False, None)
    assert client.provide("node06").provision_state == "available"
    client.deploy("node06")
    client.retire("node06", "end of life")  # an active node may be retired
    torn_down = client.undeploy("node06", erase=None)
    assert (torn_down.provision_state, torn_down.retired) == ("manageable", True)


def test_a_locked_node_is_retried_until_ironic_releases_it(client: IronicClient,
                                                           site: Site) -> None:
    enroll(client, site, "node01")
    client.manage("node01")
    client.power("node01", "power on")
    fault(site, "node01", "bmc.graceful_shutdown", "ignore")
    before = client.lock_waits
    try:
        # Ironic holds the node's lock while it waits (up to 4 s) for the soft power off.
        holder = threading.Thread(target=lambda: _soft_off_quietly(client, "node01"))
        holder.start()
        _wait_locked(client, "node01")
        patched = client.retire("node01", "locked retry")
        holder.join(30)
    finally:
        clear_faults(site)
    assert client.lock_waits > before
    assert patched.retired is True
    assert client.unretire("node01").retired is False


def _soft_off_quietly(client: IronicClient, name: str) -> None:
    with contextlib.suppress(IronicStateError):
        client.power(name, "soft power off", timeout=4)


def _wait_locked(client: IronicClient, name: str) -> None:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if client.get(name).reservation:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} was never locked by Ironic")


def test_a_bmc_refusing_the_credentials_fails_manage_at_once_with_ironics_reason(
        client: IronicClient, ironic_server: IronicServer, site: Site) -> None:
    # Ironic returns a node it could not verify to `enroll` (not a failure state): the wait
    # ends there, not at its deadline, and says why
    real = design_node(site, "node01").bmc
    assert real is not None
    wrong = dataclasses.replace(real, credential="not-the-password")
    client.enroll("badcred01", wrong)
    with pytest.raises(IronicStateError) as err:
        client.manage("badcred01")
    assert err.value.transient
    assert "badcred01: manage failed, back in provision_state 'enroll'" in err.value.message
    assert "Authentication required" in err.value.message  # Ironic's last_error, from the BMC
    assert client.get("badcred01").provision_state == "enroll"

    # the site's own enrolment asks again a bounded number of times, then names the cause
    spec = NodeSpec(name="badcred02", rack="r1", tags=(), labels={}, control_plane=False,
                    profile="", bmc=BmcSpec("redfish", "sushy", wrong.account, wrong.credential),
                    disks=(), state="new", mac="52:54:00:ba:dc:02", address="127.0.0.1")
    enroller = IronicEnroller(ironic_server.url, {}, timeout=60)
    with pytest.raises(RuntimeError) as failed:
        enroller.enroll(spec, {"port": wrong.port, "system_id": wrong.system_id})
    assert f"badcred02 manage failed ({VERIFY_ATTEMPTS} attempts), enroll:" in str(failed.value)
