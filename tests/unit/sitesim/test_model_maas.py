"""Site model (power, readiness, faults) and the MAAS machine state machine, in-process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sitesim.maas.machines import MaasError, MachineStore
from sitesim.maas.oauth import verify
from sitesim.maas.statuses import OPERATIONS, Status
from sitesim.model import SiteModel
from sitesim.scheduler import Scheduler
from sitesim.siteconfig import SiteConfigError, load_site

ROOT = Path(__file__).resolve().parents[3]


class FakeKube:
    """The site's KubePort: here Ready follows the kubelet at once."""

    def __init__(self):
        self.nodes = {}

    def add_node(self, name, labels, *, ready=True, control_plane=False):
        self.nodes[name] = {"present": True, "ready": ready, "kubelet": ready,
                            "unschedulable": False, "labels": dict(labels)}

    def set_ready(self, name, ready):
        if name in self.nodes:
            self.nodes[name]["ready"] = self.nodes[name]["kubelet"] = ready

    def node_summary(self, name):
        return self.nodes.get(name)


def until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


@pytest.fixture
def model():
    import dataclasses
    spec = load_site(ROOT / "etc/sites/demo.yaml")
    fast = dataclasses.replace(spec.timings, commission=0.01, deploy=0.01, release=0.01,
                               erase=0.01, power=0.01, kube_ready=0.01, kube_not_ready=0.01)
    scheduler = Scheduler()
    m = SiteModel(dataclasses.replace(spec, timings=fast), scheduler)
    m.kube = FakeKube()
    for node in spec.nodes:
        m.kube.add_node(node.name, {}, ready=True)
    yield m
    scheduler.stop()


@pytest.fixture
def store(model):
    s = MachineStore(model, lambda name: {"power_type": "redfish", "power_user": "admin"})
    for node in model.spec.nodes:
        s.enlist(node)
    return s


def test_power_off_turns_the_kubernetes_node_not_ready_after_a_delay(model):
    model.set_power("node04", False)
    assert model.view("node04", {})["power"] == "off"
    until(lambda: model.kube.nodes["node04"]["ready"] is False)
    model.set_power("node04", True)
    until(lambda: model.kube.nodes["node04"]["ready"] is True)


def test_faults_are_validated_and_cleared(model):
    with pytest.raises(SiteConfigError) as caught:
        model.add_fault({"node": "x", "operation": "y", "effect": "z", "extra": 1})
    assert len(caught.value.problems) == 4
    model.add_fault({"node": "node01", "operation": "bmc.power", "effect": "hang"})
    assert model.fault("bmc.power", "node01") == "hang"
    model.clear_faults()
    assert model.fault("bmc.power", "node01") is None
    model.wait_while_hung("bmc.power", "node01", limit=0.1)  # returns at once


def test_call_counts_filter_by_system_op_and_node(model):
    model.record_call("maas", "release", "node01")
    model.record_call("maas", "release", "node02")
    model.record_call("redfish", "power_off", "node01")
    assert model.call_count("maas", "release") == 2
    assert model.call_count(node="node01") == 2
    assert model.call_count("maas", "release", "node02") == 1


def test_operation_table_matches_maas_statuses():
    assert (Status.DEPLOYED.code, Status.DEPLOYED.label) == (6, "Deployed")
    assert (Status.DISK_ERASING.code, Status.FAILED_DISK_ERASING.code) == (14, 15)
    assert OPERATIONS["deploy"].allowed_from == {Status.READY, Status.ALLOCATED}
    assert OPERATIONS["release"].failure == Status.FAILED_RELEASING
    assert Status.READY not in OPERATIONS["release"].allowed_from


def test_release_then_deploy_cycle_updates_the_site(model, store):
    machine = store.by_hostname("node05")
    store.release(machine.system_id, erase=True, secure=False, quick=True)
    assert model.maas_status("node05") in ("Releasing", "Disk erasing", "Ready")
    until(lambda: model.maas_status("node05") == "Ready")
    assert all(d.wiped for d in model.node("node05").disks.values())
    del model.kube.nodes["node05"]
    store.deploy(machine.system_id, "jammy")
    until(lambda: model.maas_status("node05") == "Deployed")
    until(lambda: (model.kube.node_summary("node05") or {}).get("ready"))
    assert model.node("node05").disks["sda"].marker
    assert model.kube.nodes["node05"]["labels"]["kubernetes.io/hostname"] == "node05"


def test_release_fault_ends_in_failed_releasing_and_illegal_ops_refused(model, store):
    machine = store.by_hostname("node06")
    model.add_fault({"node": "node06", "operation": "maas.release", "effect": "fail"})
    store.release(machine.system_id, erase=False, secure=False, quick=False)
    until(lambda: model.maas_status("node06") == "Failed releasing")
    with pytest.raises(MaasError) as caught:
        store.deploy(machine.system_id, "")
    assert caught.value.code == 409
    with pytest.raises(MaasError):
        store.allocate("node06", None)


def test_hung_release_finishes_once_the_fault_is_cleared(model, store):
    machine = store.by_hostname("node06")
    model.add_fault({"node": "node06", "operation": "maas.release", "effect": "hang"})
    store.release(machine.system_id, erase=False, secure=False, quick=False)
    time.sleep(0.2)
    assert model.maas_status("node06") == "Releasing"
    model.clear_faults()
    until(lambda: model.maas_status("node06") == "Ready")


def test_delete_makes_maas_status_null(model, store):
    store.delete(store.by_hostname("node02").system_id)
    assert model.view("node02", {})["maas_status"] is None


def test_oauth_plaintext_verification():
    key = "c:t:s"
    good = ('OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", '
            'oauth_consumer_key="c", oauth_token="t", oauth_signature="%26s"')
    assert verify(good, key) is None
    assert verify(good.replace("%26s", "%26x"), key)
    assert verify(None, key)
    assert verify(good.replace("PLAINTEXT", "HMAC-SHA1"), key)
