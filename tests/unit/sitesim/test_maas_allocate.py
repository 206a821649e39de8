"""The simulated MAAS allocates and releases as MAAS does: only a Ready machine is allocated;
a release of a Ready (or Releasing) machine succeeds and erases nothing; an Allocated machine
released with erase goes through Disk erasing to Ready, every disk erased."""

from __future__ import annotations

import pytest

from sitesim.maas.machines import MaasError
from sitesim.maas.statuses import Status
from tests.unit.sitesim.test_model_maas import model, store, until  # noqa: F401


def ready(store, name):  # noqa: F811
    machine = store.by_hostname(name)
    store.release(machine.system_id, erase=False, secure=False, quick=False)
    until(lambda: machine.status == Status.READY)
    return machine


def test_a_release_of_a_ready_machine_succeeds_and_erases_nothing(model, store):  # noqa: F811
    machine = ready(store, "node05")
    markers = {d: s.marker for d, s in model.node("node05").disks.items()}
    answer = store.release(machine.system_id, erase=True, secure=True, quick=False)
    assert answer.status == Status.READY
    assert machine.erase_mode is None
    assert {d: s.marker for d, s in model.node("node05").disks.items()} == markers
    assert not any(s.wiped for s in model.node("node05").disks.values())


def test_allocate_then_release_with_erase_erases_every_disk(model, store):  # noqa: F811
    machine = ready(store, "node05")
    assert store.allocate(None, machine.system_id).status == Status.ALLOCATED
    assert machine.owner == "admin"
    store.release(machine.system_id, erase=True, secure=True, quick=False)
    assert machine.status in (Status.RELEASING, Status.DISK_ERASING)
    until(lambda: machine.status == Status.READY)
    assert all(s.wiped and s.marker is None for s in model.node("node05").disks.values())
    assert machine.owner is None


def test_only_a_ready_machine_is_allocated(store):  # noqa: F811
    deployed = store.by_hostname("node05")
    with pytest.raises(MaasError) as caught:
        store.allocate(None, deployed.system_id)
    assert caught.value.code == 409
    assert caught.value.text == (f"No available machine matches constraints: "
                                 f"system_id={deployed.system_id}")
    assert deployed.status == Status.DEPLOYED
