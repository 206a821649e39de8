"""sitesim MAAS: PXE enlistment, commissioning reads disks, storage edits change only MAAS's
records, deploy overwrites the disks its layout uses and no other, erase options, tags and
configuration."""

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


def test_storage_edits_change_no_byte_on_the_disks(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.READY, node)
    sda, sdb = machine.block_devices[0], machine.block_devices[1]
    before = {d: s.marker for d, s in model.node("node05").disks.items()}
    part = fresh.add_partition(machine.system_id, sda.id, None)
    fresh.format(part, machine, "ext4", "/")
    fresh.unformat(part, machine, sda)
    fresh.delete_partition(machine.system_id, sda.id, part.id)
    fresh.format(sdb, machine, "xfs")
    fresh.unformat(sdb, machine, sdb)
    assert {d: s.marker for d, s in model.node("node05").disks.items()} == before
    assert not any(s.wiped for s in model.node("node05").disks.values())


def _cloud_config(text: str) -> str:
    import base64
    return base64.b64encode(text.encode()).decode()


def test_deploy_overwrites_the_laid_out_disks_and_mounts_a_kept_one(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.READY, node)
    sda = machine.block_devices[0]
    data = model.node("node05").disks["sdb"].marker
    os_before = model.write_os_marker("node05")
    part = fresh.add_partition(machine.system_id, sda.id, None)
    fresh.format(part, machine, "ext4", "/")
    user_data = _cloud_config("#cloud-config\nmounts:\n- [/dev/sdb1, /var/lib/data, xfs]\n")
    fresh.deploy(machine.system_id, "jammy", user_data)
    # the status turns Deployed just before the layout is written: wait for both
    until(lambda: machine.status == Status.DEPLOYED
          and model.node("node05").disks["sda"].marker not in (None, os_before))
    disks = model.node("node05").disks
    assert disks["sda"].marker not in (None, os_before)  # overwritten by the install
    assert disks["sdb"].marker == data                   # not in the layout: untouched
    view = model.view("node05", {})
    assert view["mounts"]["/"] == {"disk": "sda", "by": "curtin (new)"}
    assert view["mounts"]["/var/lib/data"] == {"disk": "sdb",
                                               "by": "cloud-init (existing filesystem)"}


def test_deploy_overwrites_a_data_disk_the_layout_formats(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.READY, node)
    sda, sdb = machine.block_devices[0], machine.block_devices[1]
    data = model.node("node05").disks["sdb"].marker
    part = fresh.add_partition(machine.system_id, sda.id, None)
    fresh.format(part, machine, "ext4", "/")
    fresh.add_partition(machine.system_id, sdb.id, None)
    fresh.deploy(machine.system_id, "jammy")
    # the status turns Deployed just before the layout is written: wait for both
    until(lambda: machine.status == Status.DEPLOYED
          and model.node("node05").disks["sdb"].marker not in (None, data))


@pytest.mark.parametrize(("flags", "sda", "sdb"), [
    ((True, False, False), "maas erase: zeroed", "maas erase: zeroed"),
    ((True, True, False), "maas secure_erase", "maas erase: zeroed (secure erase unsupported)"),
    ((True, True, True), "maas secure_erase", "maas quick_erase (secure erase unsupported)"),
    ((True, False, True), "maas quick_erase", "maas quick_erase"),
])
def test_release_erases_every_disk_as_maas_does(model, fresh, flags, sda, sdb):  # noqa: F811
    import dataclasses
    node = model.spec.node("node05")
    no_secure = dataclasses.replace(node.disks[1], secure_erase=False)
    node = dataclasses.replace(node, disks=(node.disks[0], no_secure))
    model.spec = dataclasses.replace(model.spec, nodes=tuple(
        node if n.name == "node05" else n for n in model.spec.nodes))
    machine = fresh.create("node05", node.mac, Status.DEPLOYED, node)
    fresh.release(machine.system_id, *flags)
    until(lambda: machine.status == Status.READY)
    disks = model.node("node05").disks
    assert (disks["sda"].wiped_by, disks["sdb"].wiped_by) == (sda, sdb)
    assert disks["sda"].marker is None and disks["sdb"].marker is None


def test_release_without_erase_keeps_every_byte(model, fresh):  # noqa: F811
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.DEPLOYED, node)
    before = {d: s.marker for d, s in model.node("node05").disks.items()}
    fresh.release(machine.system_id, False, True, True)  # secure/quick without erase: no erase
    until(lambda: machine.status == Status.READY)
    assert {d: s.marker for d, s in model.node("node05").disks.items()} == before


def test_deployed_machines_carry_their_storage_layout(model):  # noqa: F811
    store = MachineStore(model, lambda name: {"power_type": "redfish"})
    node = model.spec.node("node01")
    machine = store.create("node01", node.mac, Status.DEPLOYED, node)
    mounts = [p.mount_point for d in machine.block_devices for p in d.partitions]
    assert "/" in mounts


def test_deploy_refuses_user_data_it_cannot_decode(model, fresh):  # noqa: F811
    from sitesim.maas.machines import MaasError
    node = model.spec.node("node05")
    machine = fresh.create("node05", node.mac, Status.READY, node)
    with pytest.raises(MaasError) as err:
        fresh.deploy(machine.system_id, "jammy", "not base64 !")
    assert err.value.code == 400 and "user_data" in err.value.text
    assert machine.status == Status.READY
