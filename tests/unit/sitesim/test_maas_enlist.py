"""sitesim MAAS: PXE enlistment, commissioning reads disks, deploy keeps data disks, storage
edits that lose data wipe the disk, tags and configuration."""

from __future__ import annotations

import pytest

from sitesim.maas.machines import MachineStore
from sitesim.maas.statuses import Status
from tests.unit.sitesim.test_model_maas import model, until  # noqa: F401


@pytest.fixture
def fresh(model):  # noqa: F811
    """A store that knows no machine; PXE-booted nodes enlist themselves."""
    s = MachineStore(model, lambda name: {"power_type": "ipmi", "power_address": "127.0.0.1",
                                          "power_user": "admin"})
    model.on_power_change(s.on_power)
    return s


def test_a_powered_on_pxe_booting_unknown_node_enlists_as_new(model, fresh):  # noqa: F811
    model.set_power("node05", False)
    model.set_boot_device("node05", "pxe")
    model.set_power("node05", True)
    until(lambda: fresh.by_hostname("node05") is not None)
    machine = fresh.by_hostname("node05")
    assert machine.status == Status.NEW and machine.block_devices == []
    assert machine.mac == model.spec.node("node05").mac
    assert machine.power_parameters["power_address"] == "127.0.0.1"
    until(lambda: not model.is_on("node05"))
    assert model.boot_device("node05") == "hdd"
    assert model.call_count("maas", "enlist", "node05") == 1


def test_a_node_booting_from_disk_does_not_enlist(model, fresh):  # noqa: F811
    model.set_power("node05", False)
    model.set_power("node05", True)
    model.scheduler.call_later(0.05, lambda: None)
    import time
    time.sleep(0.1)
    assert fresh.by_hostname("node05") is None


def test_commissioning_reads_the_disks_and_deploy_keeps_the_data_disk(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.NEW, node)
    data = model.node("node05").disks["sdb"].marker
    fresh.commission(machine.system_id)
    until(lambda: machine.status == Status.READY)
    assert [d.name for d in machine.block_devices] == [d.name for d in node.disks]
    sda = machine.block_devices[0]
    part = fresh.add_partition(machine.system_id, sda.id, None)
    fresh.format(part, machine, "ext4", "/")
    assert model.node("node05").disks["sdb"].marker == data
    fresh.deploy(machine.system_id, "jammy")
    until(lambda: machine.status == Status.DEPLOYED)
    assert model.node("node05").disks["sda"].marker
    assert model.node("node05").disks["sdb"].marker == data


def test_deleting_a_partition_or_unformatting_wipes_that_disk_only(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.READY, node)
    sda, sdb = machine.block_devices[0], machine.block_devices[1]
    model.write_os_marker("node05")
    data = model.node("node05").disks["sdb"].marker
    part = fresh.add_partition(machine.system_id, sda.id, None)
    fresh.delete_partition(machine.system_id, sda.id, part.id)
    assert model.node("node05").disks["sda"].wiped
    fresh.format(sdb, machine, "xfs")
    assert model.node("node05").disks["sdb"].marker == data
    fresh.unformat(sdb, machine, sdb)
    assert model.node("node05").disks["sdb"].wiped


def test_deployed_machines_carry_their_storage_layout(model):  # noqa: F811
    store = MachineStore(model, lambda name: {"power_type": "redfish"})
    node = model.spec.node("node01")
    machine = store.create("node01", node.mac, Status.DEPLOYED, node)
    mounts = [p.mount_point for d in machine.block_devices for p in d.partitions]
    assert "/" in mounts
