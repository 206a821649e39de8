"""destroy_nodes, verify_nodes, relabel_nodes and validate_design run by a worker on fakes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BerthError
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
    worker.join(300)  # returns when the task ends; a loaded machine runs 200 nodes slowly
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
    assert steps == {"plan_wipe", "power_off", "wipe_disks", "release", "delete", "forget",
                     "report_disks"}
    assert all(m["node"] in ("n1", "n2") for m in task["result"]["details"]["messageList"])


def disk_rows(task: dict[str, Any], node: str) -> dict[str, dict[str, Any]]:
    """The per-disk messages of the destroy result."""
    return {m["disk"]: m for m in task["result"]["details"]["messageList"]
            if m.get("node") == node and m.get("step") == "report_disks" and "disk" in m}


def test_every_disk_is_reported_with_method_verification_and_time(make_site: SiteFactory):
    site = make_site(["n1"])
    rows = disk_rows(run_task(site), "n1")
    assert set(rows) == {"sda", "sdb"}
    for row in rows.values():
        assert row["result"] == "wiped" and row["error"] is False
        assert row["method"].startswith("MAAS secure_erase at release")
        assert row["verified_by"] == "MAAS finished the secure erase (Disk erasing, then Ready)"
        assert row["at"].startswith("20")


def test_secure_erase_follows_the_bmc_tasks_and_skips_maas_erase(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    site.oob.erase_polls = 3  # each BMC task reports Running three times first
    task = run_task(site)
    assert task["result"]["status"] == "success"
    assert sorted(site.oob.erased[site.address("n1")]) == ["sda", "sdb"]
    assert site.oob.calls[("erase_status", site.address("n1"))] >= 8
    assert site.maas.erase_modes == {"n1": None}
    rows = disk_rows(task, "n1")
    assert {r["method"] for r in rows.values()} == {"redfish Drive.SecureErase"}
    assert rows["sda"]["verified_by"] == "BMC task task-1: Completed"


def test_a_failed_bmc_erase_task_fails_the_node_before_release(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    site.oob.erase_fails.add("sdb")
    task = run_task(site)
    assert task["result"]["status"] == "failure"
    assert any("Drive.SecureErase of sdb failed" in m for m in messages(task, "n1"))
    assert site.maas.calls[("release", "n1")] == 0 and "n1" in {
        m.hostname for m in site.maas.machines.values()}


def test_quick_and_zero_erases_are_left_to_maas(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    run_task(site, node_filter=names("n1"), options={"erase": "quick"})
    run_task(site, node_filter=names("n2"), options={"erase": "zero"})
    assert site.maas.erase_modes == {"n1": "quick", "n2": "zero"}
    assert site.address("n1") not in site.oob.erased


def test_secure_only_refuses_a_node_whose_bmc_cannot_erase_every_disk(make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda"]
    task = run_task(site, options={"erase": "secure_only"})
    assert task["result"]["status"] == "failure"
    [text] = [m for m in messages(task, "n1") if "secure_only" in m]
    assert "not on sdb" in text and "Nothing was touched" in text
    assert site.oob.calls[("graceful", site.address("n1"))] == 0
    assert site.maas.calls[("release", "n1")] == 0


def test_preserve_local_storage_erases_only_the_os_disk_through_the_bmc(
        make_site: SiteFactory):
    site = make_site(["n1"])
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    task = run_task(site, options={"preserve_local_storage": True})
    assert task["result"]["status"] == "success"
    assert site.oob.erased[site.address("n1")] == ["sda"]
    assert site.maas.erase_modes == {"n1": None}  # MAAS would erase every disk
    rows = disk_rows(task, "n1")
    assert rows["sda"]["result"] == "wiped" and rows["sdb"]["result"] == "kept"
    assert rows["sdb"]["method"] is None and rows["sdb"]["verified_by"] is None
    assert site.runtime.nodes.kept_disks("n1") == ["sdb"]


def test_preserve_local_storage_without_a_bmc_erase_is_refused_untouched(
        make_site: SiteFactory):
    site = make_site(["n1"])  # the BMC offers Drive.SecureErase on no drive
    task = run_task(site, options={"preserve_local_storage": True})
    assert task["result"]["status"] == "failure"
    [text] = [m for m in messages(task, "n1") if "preserve_local_storage" in m]
    assert "erase the OS disk sda alone" in text and "offers Drive.SecureErase on no drive" in text
    assert site.oob.calls[("graceful", site.address("n1"))] == 0
    assert site.oob.power.get(site.address("n1"), "on") == "on"
    assert "n1" in {m.hostname for m in site.maas.machines.values()}
    assert site.maas.calls[("release", "n1")] == 0


def test_os_disk_erase_none_is_the_explicit_alternative_and_says_so(make_site: SiteFactory):
    site = make_site(["n1"])
    task = run_task(site, options={"preserve_local_storage": True, "os_disk_erase": "none"})
    assert task["result"]["status"] == "success"
    assert site.maas.erase_modes == {"n1": None}
    rows = disk_rows(task, "n1")
    assert rows["sda"]["result"] == "not wiped"
    assert "the next deploy's layout overwrites it" in rows["sda"]["method"]
    assert rows["sdb"]["result"] == "kept"


def test_destroy_options_are_checked(make_site: SiteFactory):
    from drydock_api.tasks.destroy import check_options
    assert check_options({"erase": "paranoid"}) == [
        "options.erase must be one of secure, secure_only, quick, zero"]
    assert check_options({"os_disk_erase": "none"}) == [
        "options.os_disk_erase is only allowed with preserve_local_storage"]
    assert "not with preserve_local_storage" in check_options(
        {"preserve_local_storage": True, "erase": "quick"})[0]


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


def test_destroying_a_destroyed_node_succeeds_when_it_needs_no_maas_erase(
        make_site: SiteFactory):
    site = make_site(["n1"])
    assert run_task(site)["result"]["status"] == "success"
    again = run_task(site, options={"preserve_local_storage": True, "os_disk_erase": "none"})
    assert again["result"]["status"] == "success"
    assert site.maas.calls[("release", "n1")] == 1
    assert any("nothing to release" in m for m in messages(again))


def test_destroying_a_destroyed_node_again_refuses_the_wipe_maas_cannot_do(
        make_site: SiteFactory):
    site = make_site(["n1"])
    assert run_task(site)["result"]["status"] == "success"
    site.oob.power[site.address("n1")] = "on"  # the node was powered on since
    again = run_task(site)
    assert again["result"]["status"] == "failure"
    [text] = [m for m in messages(again, "n1") if "WipeNotPossible" in m or "MAAS cannot" in m]
    assert "the machine is not in MAAS" in text and "Nothing was touched" in text
    assert site.oob.power[site.address("n1")] == "on"


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
    assert len(tree) == 1 + 1 + 3 + 7 + 7 + 1


def test_power_off_nodes_forces_the_power_off_and_confirms_it(make_site: SiteFactory):
    site = make_site(["n1", "n2"])
    site.oob.ignore_graceful.add(site.address("n1"))  # a hung OS ignores a soft off
    site.oob.power[site.address("n2")] = "off"
    task = run_task(site, "power_off_nodes", names("n1", "n2"), {"force": True})
    assert task["result"]["status"] == "success"
    assert site.oob.power[site.address("n1")] == "off"
    assert site.oob.calls[("graceful", site.address("n1"))] == 0
    assert site.oob.calls[("force_off", site.address("n2"))] == 0  # already off: untouched
    text = messages(task)
    assert any("forced off" in m for m in text) and any("already off" in m for m in text)
    assert site.maas.machines  # nothing but the power changed


def test_power_off_nodes_refuses_unknown_options(make_site: SiteFactory):
    site = make_site(["n1"])
    body = {"action": "power_off_nodes", "design_ref": site.href, "node_filter": None,
            "options": {"force": "yes", "wipe": True}}
    with pytest.raises(BerthError) as err:
        site.runtime.service.create(body, RequestContext(user="admin"), None)
    text = str(err.value.messages)
    assert err.value.code == 400
    assert "options.force must be true or false" in text and "'wipe'" in text


def test_a_bmc_that_comes_back_within_the_outage_window_lets_the_step_go_on(
        make_site: SiteFactory):
    site = make_site(["n1"], steps={"outage_window": 30, "step_retries": 0,
                                    "step_retry_delay": 0.05})
    address = site.address("n1")
    site.oob.unreachable.add(address)
    original = site.oob.power_state
    calls = {"n": 0}

    def flaky(bmc):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            site.oob.unreachable.discard(address)  # the BMC is back
        return original(bmc)

    site.oob.power_state = flaky  # type: ignore[method-assign]
    task = run_task(site, "power_off_nodes", names("n1"))
    assert task["result"]["status"] == "success" and calls["n"] >= 3


def test_a_bmc_gone_for_good_fails_the_node_naming_the_bmc_and_the_tries(
        make_site: SiteFactory):
    site = make_site(["n1"], steps={"outage_window": 0, "step_retries": 2,
                                    "step_retry_delay": 0.001})
    site.oob.unreachable.add(site.address("n1"))
    task = run_task(site, "power_off_nodes", names("n1"))
    assert task["result"]["status"] == "failure"
    failure = [m for m in messages(task, "n1") if "did not answer" in m]
    assert failure and "(3 tries" in failure[0] and site.address("n1") in failure[0]


def test_with_the_default_pool_every_node_of_a_200_node_task_waits_at_the_same_time(
        make_site: SiteFactory):
    """A node waiting on its BMC holds a pool thread; the default pool must not queue a
    large task's nodes behind each other (each power-off here returns only once all 200
    nodes have asked for theirs)."""
    nodes = [f"n{i:03d}" for i in range(200)]
    # Generous time-outs: on a loaded machine 200 threads take a while to meet.
    site = make_site(nodes, oob={"poll_interval": 0.001, "graceful_timeout": 0.05,
                                 "power_timeout": 120.0})
    barrier = threading.Barrier(200, timeout=120)
    power_off = site.oob.power_off

    def all_at_once(bmc: Any, *, graceful: bool) -> None:
        barrier.wait()
        power_off(bmc, graceful=graceful)

    site.oob.power_off = all_at_once  # type: ignore[method-assign]
    task = run_task(site, "power_off_nodes", names(*nodes), {"force": True})
    assert task["result"]["status"] == "success", [
        m for m in task["result"]["details"]["messageList"] if m["error"]][:3]
    assert len(task["result"]["successes"]) == 200
    assert not barrier.broken
