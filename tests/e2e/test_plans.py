"""Plans end to end on the demo site: a plan of each action kind changes nothing anywhere;
blockers (a PDB at zero, etcd that would lose quorum, an IPMI node asked to keep storage);
an action created from a plan stops when a PDB tightened after planning."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import steps_of, web_node
from tests.fixtures.services import Berth, wait_for

# Plans of redeploy_server use the committed revision: tagging one site-action-success here
# would change what test_redeploy_server.py (run later in the same session) starts from.
pytestmark = pytest.mark.slow
WRITES = {"kube": ("patch_node", "eviction", "delete_pod", "delete_node", "create_lease",
                   "update_lease"),
          "maas": ("release", "delete", "deploy", "commission"),
          "redfish": ("secure_erase", "power_off", "power_on", "set_boot"),
          "ipmi": ("set_boot", "power_off", "power_on"),
          "etcd": ("member_add", "member_stop")}
PDB = "/apis/policy/v1/namespaces/demo/poddisruptionbudgets/web"


def writes(berth: Berth) -> dict[str, int]:
    return {f"{s}.{op}": berth.calls(system=s, op=op) for s, ops in WRITES.items()
            for op in ops}


def make_plan(berth: Berth, name: str, **params: Any) -> dict[str, Any]:
    if name == "redeploy_server":  # no revision is tagged here: later files expect none
        params.setdefault("target-revision", "committed")
    resp = berth.api("POST", "/plans", json={"name": name, "parameters": params})
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


def set_min_available(berth: Berth, value: int) -> None:
    """Patch the demo PDB and wait until its status shows the new budget."""
    assert berth.site.kube is not None
    api = berth.site.kube.api  # the cluster admin, as `kubectl patch pdb` would
    assert api.patch(PDB, {"spec": {"minAvailable": value}})
    wait_for(lambda: (api.get(PDB) or {}).get("status", {}).get("desiredHealthy") == value,
             30, f"PDB web desiredHealthy {value}")


@pytest.fixture
def tight_budget(berth: Berth) -> Iterator[None]:
    set_min_available(berth, 3)
    try:
        yield
    finally:
        set_min_available(berth, 2)


def test_a_plan_of_each_action_kind_changes_nothing(berth: Berth) -> None:
    before, actions = writes(berth), len(berth.api("GET", "/actions").json())
    web = web_node(berth, avoid="node06")  # node06 has an IPMI BMC: other wipe facts
    plan = make_plan(berth, "redeploy_server", target_nodes=f"{web},node02")
    compute, control = plan["nodes"]
    assert compute["path"]["path"] == "graceful" and plan["verdict"] != "blocked", plan
    evicted = [p["pod"] for p in compute["drain"]["evict"]]
    assert any(p.startswith("demo/web-") for p in evicted)
    assert any("DaemonSet" in p["reason"] for p in compute["drain"]["skipped"])
    assert [b["budget"] for b in compute["drain"]["budgets"]] == ["demo/web"]
    assert compute["capacity"]["requests"]["cpu_m"] >= 500
    assert compute["baremetal"]["bmc"]["power_state"] == "on"
    assert compute["baremetal"]["maas_status"] == "Deployed"
    assert {d["disk"] for d in compute["baremetal"]["wipe"]["disks"]} == {"sda", "sdb"}
    [etcd] = control["etcd"]
    assert etcd["before"]["members"] == 3 and etcd["after"]["members"] == 2
    assert etcd["after"]["quorum"] == 2 and etcd["allowed"] is True
    for name in ("deploy_site", "update_site"):
        site_plan = make_plan(berth, name, **{"allow-intermediate-commits": True})
        assert site_plan["groups"] and all(g["nodes"] for g in site_plan["groups"])
        assert site_plan["groups"][0]["position"] == 1
    relabel = make_plan(berth, "relabel_nodes", target_nodes="node05")
    assert [n["node"] for n in relabel["nodes"]] == ["node05"]
    shown = berth.cli("plan", "redeploy_server", "--param", "target_nodes=node04",
                      "--param", "target-revision=committed")
    assert shown.exit_code == 0 and "Plan " in shown.output, shown.output
    assert writes(berth) == before
    assert len(berth.api("GET", "/actions").json()) == actions
    assert not berth.sim(f"/nodes/{web}")["kubernetes"]["unschedulable"]


def _blockers(plan: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(b["node"], b["message"]) for b in plan["blockers"]]


def test_plan_blockers_pdb_at_zero_lost_quorum_and_ipmi_keeping_storage(
        berth: Berth, faults: Any, tight_budget: None) -> None:
    faults("node03", "etcd.member_down")
    web = web_node(berth, avoid="node06")
    targets = f"node01,{web},node06"

    def blocked() -> dict[str, Any] | None:
        plan = make_plan(berth, "redeploy_server", target_nodes=targets,
                         **{"preserve-local-storage": True})
        text = " ".join(m for _, m in _blockers(plan))
        return plan if "etcd cluster kubernetes" in text else None

    plan = wait_for(blocked, 180, "etcd member on node03 to be seen down")
    assert plan["verdict"] == "blocked"
    found = _blockers(plan)
    assert any(n == "node01" and "below the quorum" in m for n, m in found), found
    assert any(n == web and "PodDisruptionBudget demo/web allows 0" in m
               for n, m in found), found
    assert any(n == "node06" and "preserve_local_storage" in m and "ipmi" in m
               for n, m in found), found
    refused = berth.api("POST", "/actions", json={
        "name": "redeploy_server", "plan_id": plan["id"], "parameters": {
            "target_nodes": targets, "preserve-local-storage": True,
            "target-revision": "committed"}})
    assert refused.status_code in (400, 409)
    faults.clear()
    wait_for(lambda: not [m for _, m in _blockers(make_plan(
        berth, "redeploy_server", target_nodes="node01")) if "etcd" in m], 180,
        "etcd to recover")


def test_action_from_a_plan_stops_when_the_pdb_tightened(berth: Berth) -> None:
    node = web_node(berth)
    plan = make_plan(berth, "redeploy_server", target_nodes=node)
    assert plan["verdict"] != "blocked", plan["blockers"]
    before = writes(berth)
    set_min_available(berth, 3)
    try:
        resp = berth.api("POST", "/actions", json={
            "name": "redeploy_server", "plan_id": plan["id"], "parameters": {
                "target_nodes": node, "target-revision": "committed"}})
        assert resp.status_code == 201, resp.text
        view = berth.wait_action(resp.json()["id"])
    finally:
        set_min_available(berth, 2)
    step = steps_of(view)[f"decommission.{node}"]
    assert view["state"] == "failed" and step["reason"] == "PlanFactsChanged"
    changes = {c["fact"]: (c["planned"], c["now"]) for c in step["details"]["changes"]}
    assert changes == {"PodDisruptionBudget demo/web disruptions allowed": (1, 0)}
    assert writes(berth) == before  # nothing was cordoned, evicted, powered or wiped
