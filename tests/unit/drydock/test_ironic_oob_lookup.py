"""Power through Ironic finds the node whose driver_info names the BMC from one listing of
Ironic's nodes: no read per node (a site of hundreds of nodes would pay hundreds of API calls
for each power look), and no credential kept from driver_info."""

from __future__ import annotations

from typing import Any

import pytest
from openstack.baremetal.v1.node import Node

from drydock_api.drivers.ironic.client import IronicClient
from drydock_api.drivers.ironic.provisioner import IronicOob
from drydock_api.drivers.oob_fake import FakeOob
from drydock_api.drivers.ports import BmcAccess, OobError


class Baremetal:
    """The openstacksdk baremetal proxy's listing, counted; a read of one node fails."""

    def __init__(self, nodes: list[Node]) -> None:
        self.listed, self._nodes = 0, nodes

    def nodes(self, details: bool = False) -> list[Node]:
        assert details  # driver_info comes with the detailed listing
        self.listed += 1
        return self._nodes

    def get_node(self, *args: Any, **kwargs: Any) -> Node:
        raise AssertionError("a node was read on its own")


def ipmi_node(i: int, power: str) -> Node:
    return Node(id=f"uuid-{i}", name=f"node{i:03d}", provision_state="active",
                power_state=power, driver="ipmi",
                driver_info={"ipmi_address": f"10.0.1.{i}", "ipmi_port": 623,
                             "ipmi_username": "admin", "ipmi_password": "******"})


def redfish_node(i: int, power: str) -> Node:
    return Node(id=f"uuid-r{i}", name=f"rf{i:03d}", provision_state="active",
                power_state=power, driver="redfish",
                driver_info={"redfish_address": "https://10.0.2.1:443",
                             "redfish_system_id": f"/redfish/v1/Systems/{i}",
                             "redfish_username": "admin", "redfish_password": "******"})


def oob(nodes: list[Node]) -> tuple[IronicOob, Baremetal]:
    bm = Baremetal(nodes)
    return IronicOob(IronicClient(bm), FakeOob()), bm  # type: ignore[arg-type]


def test_the_bmcs_node_is_found_in_one_listing() -> None:
    nodes = [ipmi_node(i, "power on") for i in range(1, 200)]
    nodes += [redfish_node(7, "power off"), ipmi_node(200, "power off")]
    driver, bm = oob(nodes)
    assert driver.power_state(BmcAccess("ipmi", "10.0.1.200", 623, "admin", "pw")) == "off"
    assert driver.power_state(BmcAccess("ipmi", "10.0.1.3", 623, "admin", "pw")) == "on"
    rf = BmcAccess("redfish", "10.0.2.1", 443, "admin", "pw", system_id="7")
    assert driver.power_state(rf) == "off"
    assert bm.listed == 3  # one listing a look, whatever the number of nodes


def test_a_bmc_no_node_names_is_refused_and_no_credential_is_kept() -> None:
    driver, _ = oob([ipmi_node(1, "power on")])
    with pytest.raises(OobError, match="Ironic has no node with BMC"):
        driver.power_state(BmcAccess("ipmi", "10.0.1.1", 6230, "admin", "pw"))  # other port
    node = driver.client.nodes()[0]
    assert node.bmc == {"ipmi_address": "10.0.1.1", "ipmi_port": "623"}
