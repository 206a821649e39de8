"""prepare_nodes and deploy_nodes on the simulated site (real Redfish emulator, real IPMI)."""

from __future__ import annotations

import pytest

from tests.integration.drydock.lifecycle import LifecycleEnv

pytestmark = pytest.mark.slow


def errors(task) -> list[str]:
    return [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]


def test_verify_and_prepare_site(lc_env: LifecycleEnv):
    verified = lc_env.run("verify_site", [])
    assert verified["result"]["status"] == "success", errors(verified)
    prepared = lc_env.run("prepare_site", [])
    assert prepared["result"]["status"] == "success", errors(prepared)
    assert "change" in prepared["result"]["message"]


def test_unknown_nodes_enlist_through_pxe_and_power_cycle(lc_env: LifecycleEnv):
    for name in ("lc-rf-new", "lc-ipmi-new"):
        assert lc_env.sim(f"/nodes/{name}")["maas_status"] is None
    task = lc_env.run("prepare_nodes", ["lc-rf-new", "lc-ipmi-new"])
    assert task["result"]["status"] == "success", errors(task)
    for name in ("lc-rf-new", "lc-ipmi-new"):
        node = lc_env.sim(f"/nodes/{name}")
        assert node["maas_status"] == "Ready"
        assert lc_env.sim("/calls", system="maas", op="enlist", node=name)["count"] == 1
        assert lc_env.sim("/calls", system="maas", op="commission", node=name)["count"] == 1
    assert lc_env.sim("/calls", system="redfish", op="set_boot", node="lc-rf-new")["count"] == 1
    assert lc_env.sim("/calls", system="ipmi", op="set_boot", node="lc-ipmi-new")["count"] == 1


def test_prepare_and_deploy_torn_down_nodes_end_deployed_and_ready(lc_env: LifecycleEnv):
    """The data disk kept by teardown survives the redeploy byte for byte and is mounted as
    it is: Redfish erases the OS disk through a BMC task; the IPMI node, which has no
    per-drive erase, is refused unless os_disk_erase: none is chosen (then the deploy's
    layout overwrites the OS disk)."""
    nodes = ["lc-rf-a", "lc-ipmi-a"]
    data_before = {n: lc_env.sim(f"/nodes/{n}")["disks"]["sdb"]["marker"] for n in nodes}
    os_before = {n: lc_env.sim(f"/nodes/{n}")["disks"]["sda"]["marker"] for n in nodes}
    refused = lc_env.run("destroy_nodes", ["lc-ipmi-a"], preserve_local_storage=True)
    assert refused["result"]["status"] == "failure"
    assert lc_env.sim("/nodes/lc-ipmi-a")["maas_status"] == "Deployed"
    destroyed = lc_env.run("destroy_nodes", ["lc-rf-a"], preserve_local_storage=True)
    assert destroyed["result"]["status"] == "success", errors(destroyed)
    destroyed = lc_env.run("destroy_nodes", ["lc-ipmi-a"], preserve_local_storage=True,
                           os_disk_erase="none")
    assert destroyed["result"]["status"] == "success", errors(destroyed)
    for name in nodes:
        node = lc_env.sim(f"/nodes/{name}")
        assert node["maas_status"] is None and node["power"] == "off"
        assert node["disks"]["sdb"]["marker"] == data_before[name]
    assert lc_env.sim("/nodes/lc-rf-a")["disks"]["sda"]["marker"] is None
    assert lc_env.sim("/nodes/lc-ipmi-a")["disks"]["sda"]["marker"] == os_before["lc-ipmi-a"]
    prepared = lc_env.run("prepare_nodes", nodes)
    assert prepared["result"]["status"] == "success", errors(prepared)
    deployed = lc_env.run("deploy_nodes", nodes)
    assert deployed["result"]["status"] == "success", errors(deployed)
    for name in nodes:
        node = lc_env.sim(f"/nodes/{name}")
        assert node["maas_status"] == "Deployed" and node["power"] == "on"
        # deploy_nodes ends at MAAS Deployed; the node joins Kubernetes after (its Ready is
        # what Shipyard's wait_node_ready waits for)
        lc_env.until(lambda n=name: lc_env.sim(f"/nodes/{n}")["kubernetes"]["ready"],
                     timeout=120, what=f"{name} Ready in Kubernetes")  # as the site allows
        assert node["disks"]["sda"]["marker"] not in (None, os_before[name])
        assert node["disks"]["sdb"]["marker"] == data_before[name]
        assert node["mounts"]["/var/lib/data"] == {"disk": "sdb",
                                                   "by": "cloud-init (existing filesystem)"}
        assert node["mounts"]["/"]["disk"] == "sda"
    again = lc_env.run("deploy_nodes", nodes)
    assert again["result"]["status"] == "success"
    assert all(lc_env.sim("/calls", system="maas", op="deploy", node=n)["count"] == 1
               for n in nodes)


def test_deploy_failure_in_maas_is_partial_success_with_the_reason(lc_env: LifecycleEnv):
    nodes = ["lc-rf-new", "lc-ipmi-new"]
    lc_env.fault("lc-rf-new", "maas.deploy", "fail")
    try:
        task = lc_env.run("deploy_nodes", nodes)
    finally:
        lc_env.clear_faults()
    assert task["result"]["status"] == "partial_success", errors(task)
    assert task["result"]["failures"] == ["lc-rf-new"]
    assert any("Failed deployment" in e for e in errors(task))
    assert lc_env.sim("/nodes/lc-ipmi-new")["maas_status"] == "Deployed"
