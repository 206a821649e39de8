"""verify_site, prepare_site, prepare_nodes and deploy_nodes run by a worker on fakes."""

from __future__ import annotations

import pytest

from drydock_api.drivers.ports import MaasError
from drydock_api.tasks.lifecycle import deploy_steps, parse_size
from tests.unit.drydock.conftest import SiteFactory
from tests.unit.drydock.test_orchestrator import messages, names, run_task


def torn_down(site, *nodes: str) -> None:
    for name in nodes:
        site.maas.delete_machine(f"id-{name}")
        site.oob.power[site.address(name)] = "off"


def enlist_on_pxe(site) -> None:
    """A node PXE-booted through its BMC enlists in MAAS as New (what MAAS does)."""
    by_address = {site.address(n): n for n in ("n1", "n2")}

    def boot(address: str, pxe: bool) -> None:
        if pxe:
            site.maas.add(by_address[address], "New")

    site.oob.on_boot = boot


def test_verify_site_reports_maas_reachable(make_site: SiteFactory):
    site = make_site(["n1"])
    task = run_task(site, "verify_site")
    assert task["result"]["status"] == "success"
    assert "fake MAAS" in task["result"]["message"]


def test_verify_site_fails_when_maas_refuses(make_site: SiteFactory, monkeypatch):
    site = make_site(["n1"])

    def refuse() -> str:
        raise MaasError("MAAS refused GET /version/ (401): bad key")

    monkeypatch.setattr(site.maas, "check", refuse)
    task = run_task(site, "verify_site")
    assert task["result"]["status"] == "failure" and "401" in task["result"]["message"]


def test_prepare_site_creates_missing_tags_and_boot_settings_once(make_site: SiteFactory):
    site = make_site(["n1"])
    site.maas.tag_names.add("default")
    task = run_task(site, "prepare_site")
    assert task["result"]["status"] == "success"
    assert site.maas.tag_names == {"default", "compute"}
    assert site.maas.config == {"default_distro_series": "jammy"}
    again = run_task(site, "prepare_site")
    assert "nothing to change" in again["result"]["message"]


def test_prepare_then_deploy_torn_down_nodes_enlists_commissions_lays_out_and_deploys(
        make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    torn_down(site, "n1", "n2")
    enlist_on_pxe(site)
    prepared = run_task(site, "prepare_nodes")
    assert prepared["result"]["status"] == "success", messages(prepared)
    assert site.oob.calls[("set_pxe", site.address("n1"))] == 1
    assert site.maas.status("n1") == "Ready" and site.maas.calls[("commission", "n1")] == 1
    layout = {d.name: [(p.fstype, p.mount_point) for p in d.partitions]
              for d in site.maas.block_devices("id-n1")}
    assert layout == {"sda": [("ext4", "/boot"), ("ext4", "/")],
                      "sdb": [("xfs", "/var/lib/data")]}
    deployed = run_task(site, "deploy_nodes")
    assert deployed["result"]["status"] == "success", messages(deployed)
    assert site.maas.status("n1") == "Deployed" and site.maas.deployed_images["n1"] == "jammy"
    assert site.maas.deployed_kernels["n1"] == "ga-22.04"


def test_a_disk_kept_by_teardown_stays_out_of_the_layout_and_is_mounted_as_it_is(
        make_site: SiteFactory):
    import base64

    import yaml
    site = make_site(["n1", "n2"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    destroyed = run_task(site, node_filter=names("n1"),
                         options={"preserve_local_storage": True})
    assert destroyed["result"]["status"] == "success", messages(destroyed)
    enlist_on_pxe(site)
    prepared = run_task(site, "prepare_nodes", names("n1"))
    assert prepared["result"]["status"] == "success", messages(prepared)
    layout = {d.name: [(p.fstype, p.mount_point) for p in d.partitions]
              for d in site.maas.block_devices("id-n1")}
    assert layout == {"sda": [("ext4", "/boot"), ("ext4", "/")], "sdb": []}
    assert any("sdb kept out of the layout" in m for m in messages(prepared, "n1"))
    deployed = run_task(site, "deploy_nodes", names("n1"))
    assert deployed["result"]["status"] == "success", messages(deployed)
    text = base64.b64decode(site.maas.user_data["n1"] or "").decode()
    assert text.startswith("#cloud-config\n")
    assert yaml.safe_load(text)["mounts"] == [
        ["/dev/sdb1", "/var/lib/data", "xfs", "defaults,nofail", "0", "2"]]


def test_a_full_teardown_forgets_kept_disks(make_site: SiteFactory):
    site = make_site(["n1"])
    site.runtime.nodes.set_kept_disks("n1", ["sdb"])
    run_task(site)
    assert site.runtime.nodes.kept_disks("n1") == []


def test_nodes_already_in_the_target_state_succeed_untouched(make_site: SiteFactory):
    site = make_site(["n1"])
    prepared = run_task(site, "prepare_nodes")
    deployed = run_task(site, "deploy_nodes")
    assert prepared["result"]["status"] == deployed["result"]["status"] == "success"
    assert site.maas.calls[("commission", "n1")] == site.maas.calls[("deploy", "n1")] == 0
    assert site.oob.calls[("set_pxe", site.address("n1"))] == 0
    assert any("already deployed" in m for m in messages(deployed, "n1"))


def test_a_disk_already_laid_out_keeps_its_partitions(make_site: SiteFactory):
    site = make_site(["n1"])
    site.maas.add("n1", "Ready")
    run_task(site, "prepare_nodes")
    run_task(site, "prepare_nodes")
    assert site.maas.calls[("partition_delete", "n1")] == 0


def test_commissioning_failure_fails_only_that_node(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    site.maas.add("n1", "New")
    site.maas.add("n2", "New")
    site.maas.fail_commission.add("n1")
    task = run_task(site, "prepare_nodes")
    assert task["result"]["status"] == "partial_success"
    assert task["result"]["failures"] == ["n1"] and task["result"]["successes"] == ["n2"]
    assert any("Failed commissioning" in m for m in messages(task, "n1"))


def test_deploy_failure_carries_the_maas_status(make_site: SiteFactory):
    site = make_site(["n1"])
    site.maas.add("n1", "Ready")
    site.maas.fail_deploy.add("n1")
    task = run_task(site, "deploy_nodes")
    assert task["result"]["status"] == "failure"
    assert any("Failed deployment" in m for m in messages(task, "n1"))


def test_deploy_of_an_unprepared_node_fails_with_the_reason(make_site: SiteFactory):
    site = make_site(["n1"])
    torn_down(site, "n1")
    task = run_task(site, "deploy_nodes", names("n1"))
    assert task["result"]["status"] == "failure"
    assert any("prepare_nodes first" in m for m in messages(task, "n1"))


def test_deploy_ends_at_maas_deployed_without_asking_kubernetes(make_site: SiteFactory):
    """Kubernetes readiness is Shipyard's (wait_node_ready): deploy_nodes has no join step
    and no Kubernetes port, and succeeds once MAAS reports the machine Deployed."""
    site = make_site(["n1", "n2"])
    torn_down(site, "n1")
    enlist_on_pxe(site)
    run_task(site, "prepare_nodes", names("n1"))
    task = run_task(site, "deploy_nodes", names("n1"))
    assert task["result"]["status"] == "success", messages(task)
    assert site.maas.status("n1") == "Deployed"
    assert [s.name for s in deploy_steps({})] == ["deploy"]


def test_retired_nodes_are_skipped_not_failed(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    site.runtime.nodes.retire("n1", "end of warranty")
    task = run_task(site, "deploy_nodes")
    assert task["result"]["status"] == "success"
    assert task["result"]["skipped"] == ["n1"] and task["result"]["successes"] == ["n2"]
    assert task["result"]["failures"] == []
    assert any("retired (end of warranty)" in m for m in messages(task, "n1"))


@pytest.mark.parametrize("text,size", [("1g", 10**9), ("50G", 50 * 10**9), (">40g", None),
                                       ("512m", 512 * 10**6)])
def test_partition_sizes(text, size):
    assert parse_size(text) == size
