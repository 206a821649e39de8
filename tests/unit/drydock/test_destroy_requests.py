"""What a destroy asks of a node's BMC: its drive listing once per task (the wipe plan and
the wipe both need it; it cannot change while the node is torn down); a worker taking the
task over asks again."""

from __future__ import annotations

from common.context import RequestContext
from tests.unit.drydock.conftest import SiteFactory


def test_a_destroy_lists_each_bmcs_drives_once(make_site: SiteFactory) -> None:
    site = make_site(["n1", "n2"])
    for name in ("n1", "n2"):
        site.oob.drives[site.address(name)] = ["sda", "sdb"]
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}}, RequestContext(user="admin"), None)
    worker = site.runtime.new_worker("w")
    assert worker.poll_once() == 1
    worker.join(30)
    task = site.runtime.service.get(body["task_id"])
    assert task["result"]["status"] == "success", task["result"]["message"]
    for name in ("n1", "n2"):
        bmc = site.address(name)
        assert sorted(site.oob.erased[bmc]) == ["sda", "sdb"]
        assert site.oob.calls[("drives", bmc)] == 1
