"""Ironic behind Drydock's Provisioner and OobDriver ports (what the steps call), against a real
Ironic and the site's BMCs: MAAS statuses read off Ironic's states, erase refused before any
change, power through Ironic reaching the BMC."""

from __future__ import annotations

from pathlib import Path

import pytest

from drydock_api import config
from drydock_api.drivers.ironic.client import IronicClient, IronicRefused
from drydock_api.drivers.ironic.provisioner import IronicOob, IronicProvisioner
from drydock_api.drivers.ironic.wiring import ironic_ports
from drydock_api.drivers.ports import OobRouter
from drydock_api.drivers.redfish.driver import RedfishDriver
from sitesim.ironic.server import IronicServer
from sitesim.site import Site
from tests.integration.ironic.conftest import bmc_calls, design_node, fresh, site_power

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def settle(port: IronicProvisioner, name: str, status: str) -> None:
    client = port.client
    reach = {"Ready": {"available"}, "Deployed": {"active"}}[status]
    client.wait_provision(name, reach)
    machine = port.find_machine(name)
    assert machine is not None and machine.status_name == status


def test_the_provisioner_port_walks_a_node_through_ironic(client: IronicClient,
                                                          site: Site) -> None:
    fresh(client, site, "node05")
    port = IronicProvisioner(client)
    machine = port.find_machine("node05")
    assert machine is not None and machine.status_name == "New"
    assert port.commission(machine.system_id).status_name == "Ready"
    assert port.allocate(machine.system_id).status_name == "Allocated"
    mac = design_node(site, "node05").data["metadata"]["boot_mac"]
    found = port.find_by_mac(mac)
    assert found is not None and found.hostname == "node05"
    port.deploy(machine.system_id, "jammy")
    settle(port, "node05", "Deployed")
    assert site_power(site, "node05") == "on"
    with pytest.raises(IronicRefused, match="Ironic Python Agent"):
        port.release(machine.system_id, "secure")
    assert port.find_machine("node05").status_name == "Deployed"  # type: ignore[union-attr]
    assert port.release(machine.system_id, None).status_name in ("Releasing", "Ready")
    settle(port, "node05", "Ready")
    assert site_power(site, "node05") == "off"
    port.delete_machine(machine.system_id)  # stays enrolled (Ironic discovers nothing)
    kept = port.find_machine("node05")
    assert kept is not None and kept.status_name == "New"
    assert client.get("node05").provision_state == "manageable"
    assert port.commission(kept.system_id).status_name == "Ready"  # prepare_nodes again
    assert "Ironic API" in port.check()


# How long a power change through Ironic is waited for. Ironic gives up on its own after the
# client's power_timeout (20 s) and reports last_error, which ends the wait sooner; under the
# whole suite's load its conductor once had not carried out a power-on 30 s after accepting it.
WAIT = 90


def test_power_through_ironic_reaches_the_bmc(client: IronicClient, site: Site) -> None:
    fresh(client, site, "node04")
    client.manage("node04")
    oob = IronicOob(client, OobRouter({"redfish": RedfishDriver(timeout=5)}))
    bmc = design_node(site, "node04").bmc
    assert bmc is not None
    oob.power_on(bmc)
    client.wait_power("node04", "power on", WAIT)
    assert oob.power_state(bmc) == "on" and site_power(site, "node04") == "on"
    graceful = bmc_calls(site, "redfish", "graceful_shutdown", "node04")
    oob.power_off(bmc, graceful=True)
    client.wait_power("node04", "power off", WAIT)
    assert site_power(site, "node04") == "off"
    assert bmc_calls(site, "redfish", "graceful_shutdown", "node04") == graceful + 1
    oob.power_cycle(bmc)  # off: powers on
    client.wait_power("node04", "power on", WAIT)
    assert site_power(site, "node04") == "on"
    assert oob.erasable_drives(bmc)  # erase stays with the BMC (Drive.SecureErase)


def test_drydock_configured_with_an_ironic_url_provisions_through_ironic(
        ironic_server: IronicServer, tmp_path: Path) -> None:
    conf_file = tmp_path / "drydock.conf"
    conf_file.write_text(f"[ironic]\nurl = {ironic_server.url}\n")
    conf = config.load(str(conf_file))
    provisioner, oob = ironic_ports(conf)
    assert isinstance(provisioner, IronicProvisioner) and isinstance(oob, IronicOob)
    assert provisioner.check().startswith("Ironic API 1.")
    assert isinstance(provisioner.list_machines(), list)


def test_commissioning_inspects_a_redfish_node_and_its_disks_come_from_ironic(
        client: IronicClient, site: Site) -> None:
    """MAAS finds a machine's disks by commissioning it; Ironic by inspecting it: the redfish
    inspect interface reads the BMC's Processors, memory and Storage drives, and the
    provisioner reads the disks from the inventory Ironic stored."""
    fresh(client, site, "node04")
    port = IronicProvisioner(client)
    machine = port.find_machine("node04")
    assert machine is not None
    with pytest.raises(IronicRefused, match="never inspected"):
        port.block_devices(machine.system_id)  # unknown disks are not "no disks"
    assert port.commission(machine.system_id).status_name == "Ready"
    node = client.bm.get_node("node04")
    assert node.properties["cpu_arch"] == "x86_64" and node.properties["memory_mb"] == 32768
    designed = {d.name: d.size_gb * 10**9 for d in site.spec.node("node04").disks}
    assert {d.name: d.size for d in port.block_devices(machine.system_id)} == designed
    ports = client._request("GET", "/ports?node=node04&fields=address,pxe_enabled")["ports"]
    assert [p["pxe_enabled"] for p in ports] == [True]  # inspection kept it PXE booting


def test_a_node_without_inspection_reports_why_its_disks_are_unknown(
        client: IronicClient, site: Site) -> None:
    fresh(client, site, "node03")  # ipmi: no out-of-band inspection
    port = IronicProvisioner(client)
    machine = port.find_machine("node03")
    assert machine is not None
    assert port.commission(machine.system_id).status_name == "Ready"
    with pytest.raises(IronicRefused, match="node03: it was never inspected"):
        port.block_devices(machine.system_id)
