"""Each step reaches the world through the narrow interfaces it uses (power, boot, erase;
machines, storage, site): a step handed only those works, and each driver and fake serves every
interface it claims with the interface's signatures."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from common.workflow import Done, Retry
from drydock_api.drivers import ports
from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.ironic.provisioner import IronicOob, IronicProvisioner
from drydock_api.drivers.maas.client import MaasClient
from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.oob_fake import FakeOob
from drydock_api.drivers.ports import BmcAccess
from drydock_api.drivers.redfish.driver import RedfishDriver
from drydock_api.nodes.design import NodeDef
from drydock_api.tasks import actions, destroy, lifecycle, site, wipe
from drydock_api.tasks.context import NodeContext, Ports, SiteContext, StepSettings

BMC = BmcAccess("redfish", "10.0.0.1", 443, "admin", "pw")
BMC_SIDE = (ports.PowerInterface, ports.BootInterface, ports.EraseInterface)
PROVISIONER_SIDE = (ports.MachineLookup, ports.MachinesInterface, ports.StorageInterface,
                    ports.SiteInterface)


def members(protocol: type) -> dict[str, inspect.Signature]:
    """The methods a Protocol declares, its bases' included."""
    out: dict[str, inspect.Signature] = {}
    for cls in reversed(protocol.__mro__):
        if cls.__module__ != ports.__name__:
            continue
        for name, value in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(value):
                out[name] = inspect.signature(value)
    return out


@pytest.mark.parametrize("implementation", [FakeOob, RedfishDriver, IpmiDriver, IronicOob])
@pytest.mark.parametrize("interface", BMC_SIDE)
def test_every_bmc_driver_and_its_fake_serve_power_boot_and_erase(
        implementation: type, interface: type) -> None:
    declared = members(interface)
    assert declared, interface
    for name, signature in declared.items():
        method = getattr(implementation, name, None)
        assert method is not None, f"{implementation.__name__} lacks {name}"
        assert list(inspect.signature(method).parameters) == list(signature.parameters), name


@pytest.mark.parametrize("implementation", [FakeMaas, MaasClient, IronicProvisioner])
@pytest.mark.parametrize("interface", PROVISIONER_SIDE)
def test_every_provisioner_and_its_fake_serve_machines_storage_and_site(
        implementation: type, interface: type) -> None:
    declared = members(interface)
    assert declared, interface
    for name, signature in declared.items():
        method = getattr(implementation, name, None)
        assert method is not None, f"{implementation.__name__} lacks {name}"
        assert list(inspect.signature(method).parameters) == list(signature.parameters), name


def test_the_interfaces_split_the_whole_driver_without_overlap() -> None:
    bmc = [set(members(i)) for i in BMC_SIDE]
    assert set().union(*bmc) == set(members(ports.OobDriver))
    assert sum(map(len, bmc)) == len(members(ports.OobDriver))
    provisioner = [set(members(i)) for i in PROVISIONER_SIDE[1:]]
    assert set().union(*provisioner) == set(members(ports.Provisioner))
    assert sum(map(len, provisioner)) == len(members(ports.Provisioner))


def context(port_set: Ports, *, storage: dict[str, Any] | None = None,
            previous: dict[str, Any] | None = None) -> NodeContext:
    node = NodeDef("n1", None, (), {}, "redfish", BMC.address, BMC.port, BMC, ("sda",), "sda",
                   data={"storage": storage} if storage else {})
    now = [100.0]
    return NodeContext(node=node, options={}, ports=port_set,
                       settings=StepSettings(graceful_timeout=60.0),
                       request=None, clock=lambda: now[0],  # type: ignore[arg-type]
                       previous=previous or {})


def test_power_off_runs_on_a_power_interface_alone() -> None:
    bmc = FakeOob()
    ctx = context(Ports(power=bmc))
    assert isinstance(destroy.power_off(ctx), Retry)  # graceful shutdown asked
    outcome = destroy.power_off(ctx)
    assert isinstance(outcome, Done) and bmc.power[BMC.address] == "off"
    assert ctx.state["graceful"]["asked"] == "GracefulShutdown"


def test_wipe_disks_runs_on_an_erase_interface_alone() -> None:
    bmc = FakeOob()
    bmc.drives[BMC.address] = ["sda"]
    ctx = context(Ports(erase=bmc),
                  previous={"plan_wipe": {"disks": [{"disk": "sda", "method": wipe.BMC}]}})
    outcome = destroy.wipe_disks(ctx)
    assert isinstance(outcome, Done), outcome
    assert bmc.erased[BMC.address] == ["sda"]


def test_apply_storage_runs_on_machines_and_storage_alone() -> None:
    maas = FakeMaas()
    maas.add("n1", "Ready")
    spec = {"physical_devices": {"sda": {"partitions": [
        {"name": "root", "size": "10g", "filesystem": {"mountpoint": "/", "fstype": "ext4"}}]}}}
    outcome = lifecycle.apply_storage(context(Ports(machines=maas, storage=maas), storage=spec))
    assert isinstance(outcome, Done) and outcome.output["changed"] == ["sda"]
    sda = [d for d in maas.block_devices("id-n1") if d.name == "sda"][0]
    assert [(p.fstype, p.mount_point) for p in sda.partitions] == [("ext4", "/")]


def test_verify_oob_runs_on_a_power_interface_alone() -> None:
    outcome = actions.verify_oob(context(Ports(power=FakeOob())))
    assert isinstance(outcome, Done) and outcome.output == {"power_state": "on"}


def test_prepare_site_runs_on_a_site_interface_alone() -> None:
    maas = FakeMaas()
    docs = [{"schema": "drydock/Region/v1", "metadata": {"name": "region"},
             "data": {"tag_definitions": [{"tag": "fast", "definition": "fast disks"}]}}]
    ctx = SiteContext(documents=docs, options={}, ports=Ports(site=maas),
                      request=None)  # type: ignore[arg-type]
    assert site.prepare_site(ctx).ok and "fast" in maas.tags()


def test_a_step_reaching_for_an_interface_it_was_not_given_is_told_which() -> None:
    with pytest.raises(AttributeError, match="no power port was given"):
        actions.verify_oob(context(Ports(machines=FakeMaas(), erase=FakeOob())))
