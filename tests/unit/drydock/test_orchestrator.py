"""destroy_nodes, verify_nodes, relabel_nodes and validate_design run by a worker on fakes."""

from __future__ import annotations

from typing import Any

from common.context import RequestContext
from drydock_api.drivers.ports import MaasError
from tests.unit.drydock import designs as D
from tests.unit.drydock.conftest import Site, SiteFactory


def run_task(site: Site, action: str = "destroy_nodes", node_filter: Any = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    options = dict(options or {})
    if action == "destroy_nodes" and node_filter is None:
        options["all_nodes"] = True
    body, _ = site.runtime.service.create(
        {"action": action, "design_ref": site.href, "node_filter": node_filter,
         "options": options}, RequestContext(user="admin"), None)
    worker = site.runtime.new_worker("w1")
    assert worker.poll_once() == 1
    worker.join(30)
    return site.runtime.service.get(body["task_id"])


def names(*n: str) -> dict[str, Any]:
    return {"filter_set_type": "union", "filter_set": [{"node_names": list(n)}]}


def messages(task: dict[str, Any], node: str | None = None) -> list[str]:
    return [m["message"] for m in task["result"]["details"]["messageList"]
            if node is None or m.get("node") == node]


def test_destroy_powers_off_erases_releases_and_deletes_every_node(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    task = run_task(site)
    assert task["status"] == "complete" and task["result"]["status"] == "success"
    assert task["result"]["successes"] == ["n1", "n2"]
    assert all(site.oob.power[site.address(n)] == "off" for n in ("n1", "n2"))
    assert site.maas.erase_modes == {"n1": "secure", "n2": "secure"}
    assert site.maas.machines == {}
    steps = {m.get("step") for m in task["result"]["details"]["messageList"]}
    assert steps == {"power_off", "wipe_disks", "release", "wipe_os_disk", "delete", "forget"}
    assert all(m["node"] in ("n1", "n2") for m in task["result"]["details"]["messageList"])


def test_secure_erase_uses_bmc_drives_and_skips_maas_erase(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    task = run_task(site)
    assert task["result"]["status"] == "success"
    assert sorted(site.oob.erased[site.address("n1")]) == ["sda", "sdb"]
    assert site.maas.erase_modes == {"n1": None}


def test_quick_erase_is_left_to_maas(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    run_task(site, options={"erase": "quick"})
    assert site.maas.erase_modes == {"n1": "quick"}
    assert site.address("n1") not in site.oob.erased


def test_preserve_local_storage_wipes_only_the_os_disk(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    task = run_task(site, options={"preserve_local_storage": True})
    assert task["result"]["status"] == "success"
    assert site.oob.erased[site.address("n1")] == ["sda"]
    assert site.maas.erase_modes == {"n1": None}
    assert any("preserved sdb" in m for m in messages(task))


def test_preserve_local_storage_without_bmc_erase_wipes_the_os_disk_through_maas(
        make_site: SiteFactory):
    site = make_site(["n1"])
    root = site.maas.create_partition("id-n1", 1, None)
    site.maas.format_partition("id-n1", 1, root, "ext4", "/")
    data = site.maas.create_partition("id-n1", 2, None)
    task = run_task(site, options={"preserve_local_storage": True})
    assert task["result"]["status"] == "success", messages(task)
    assert site.maas.erase_modes == {"n1": None}
    assert site.maas.calls[("partition_delete", "n1")] == 1
    assert any("Wiped sda through MAAS" in m for m in messages(task, "n1"))
    assert data


def test_preserve_local_storage_fails_when_nothing_identifies_the_os_disk_data(
        make_site: SiteFactory):
    site = make_site(["n1"])
    task = run_task(site, options={"preserve_local_storage": True})
    assert task["result"]["status"] == "failure"
    assert site.maas.erase_modes == {"n1": None}
    assert any("cannot wipe it alone" in m for m in messages(task, "n1"))


def test_graceful_shutdown_ignored_leads_to_force_off(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.ignore_graceful.add(site.address("n1"))
    task = run_task(site, node_filter=names("n1"))
    assert task["result"]["status"] == "success"
    assert site.oob.calls[("force_off", site.address("n1"))] == 1
    assert any("forced off" in m for m in messages(task, "n1"))


def test_unreachable_bmc_fails_that_node_only(make_site: SiteFactory):
    site = make_site(["n1", "n2", "n3"])
    site.oob.unreachable.add(site.address("n2"))
    task = run_task(site)
    assert task["result"]["status"] == "partial_success"
    assert task["result"]["successes"] == ["n1", "n3"]
    assert task["result"]["failures"] == ["n2"]
    failed = [m for m in task["result"]["details"]["messageList"] if m["error"]]
    assert failed and failed[0]["node"] == "n2" and "did not answer" in failed[0]["message"]
    assert "id-n2" in site.maas.machines


def test_maas_release_failure_carries_maas_message(make_site: SiteFactory):
    site = make_site(["n1"])
    site.maas.fail_release["n1"] = "MAAS refused release (409): cannot release a Broken machine"
    task = run_task(site)
    assert task["result"]["status"] == "failure"
    assert any("cannot release a Broken machine" in m for m in messages(task, "n1"))


def test_destroying_a_destroyed_node_succeeds(make_site: SiteFactory):
    site = make_site(["n1"])
    assert run_task(site)["result"]["status"] == "success"
    again = run_task(site)
    assert again["result"]["status"] == "success"
    assert site.maas.calls[("release", "n1")] == 1
    assert any("nothing to release" in m for m in messages(again))


def test_retire_marks_the_node_retired_with_its_reason(make_site: SiteFactory):
    site = make_site(["n1"])
    run_task(site, options={"retire": True, "retired_reason": "bad DIMM"})
    record = site.runtime.store.node_record("n1")
    assert record is not None and record.retired and record.retired_reason == "bad DIMM"


def test_bmc_credential_never_appears_in_task_bodies(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.unreachable.add(site.address("n1"))
    task = run_task(site)
    tree = site.runtime.service.get(task["task_id"], layers=-1, subtask_errors=True)
    assert "s3cret-pw" not in repr(tree)


def test_relabel_puts_the_design_labels_through_promenade(make_site: SiteFactory):
    docs = [D.profile(), D.passphrase(), D.node("n1", labels={"kubernetes-etcd": "enabled"})]
    site = make_site(["n1"], docs=docs)
    task = run_task(site, action="relabel_nodes")
    assert task["result"]["status"] == "success"
    assert site.labeller.labels == {"n1": {"kubernetes-etcd": "enabled"}}


def test_verify_nodes_reports_power_and_maas_status(make_site: SiteFactory):
    site = make_site(["n1"])
    task = run_task(site, action="verify_nodes")
    assert task["result"]["status"] == "success"
    assert any("power on" in m for m in messages(task)) and any(
        "MAAS status Deployed" in m for m in messages(task))


def test_validate_design_task_fails_with_validation_messages(make_site: SiteFactory):
    bad = D.node("n1")
    del bad["data"]["oob"]["account"]
    site = make_site(["n1"], docs=[D.profile(), D.passphrase(), bad])
    task = run_task(site, action="validate_design")
    assert task["result"]["status"] == "failure"
    kinds = {m["kind"] for m in task["result"]["details"]["messageList"]}
    assert kinds == {"ValidationMessage"}


def test_transient_maas_errors_are_retried(make_site: SiteFactory):
    site = make_site(["n1"])
    original, failures = site.maas.find_machine, []

    def flaky(hostname: str) -> Any:
        if len(failures) < 2:
            failures.append(1)
            raise MaasError("MAAS unreachable", transient=True)
        return original(hostname)

    site.maas.find_machine = flaky  # type: ignore[method-assign]
    assert run_task(site)["result"]["status"] == "success"


def test_destroy_runs_on_postgresql_too(make_site: SiteFactory, postgres_url: str):
    site = make_site(["n1", "n2", "n3"], url=postgres_url)
    site.oob.unreachable.add(site.address("n3"))
    task = run_task(site)
    assert task["result"]["status"] == "partial_success"
    assert task["result"]["successes"] == ["n1", "n2"] and task["result"]["failures"] == ["n3"]
    tree = site.runtime.service.get(task["task_id"], layers=-1)
    assert len(tree) == 1 + 1 + 3 + 6 + 6 + 1
