"""The reboot reconciler on fakes: spec 004's rules, modes, keyed holds, leases, teardown."""

from __future__ import annotations

from typing import Any

from common.context import RequestContext
from drydock_api.nodes.reboot import RebootReconciler, RebootSettings
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory
from tests.unit.drydock.test_orchestrator import run_task

CTX = RequestContext(user="admin")


def request(site: Site, node: str = "n1", **body: Any) -> dict[str, Any]:
    view, _ = site.runtime.node_service.add_reboot(CTX, node, body, site.href)
    return view


def drive(site: Site, passes: int = 10, step: float = 0.1) -> None:
    for _ in range(passes):
        site.runtime.reconciler.pass_once()
        if site.clock is not None:
            site.clock.advance(step)


def state(site: Site, node: str = "n1") -> dict[str, Any]:
    return site.runtime.node_service.reboots(CTX, node, site.href)


def calls(site: Site, op: str, node: str = "n1") -> int:
    return site.oob.calls[(op, site.address(node))]


def soft_site(make_site: SiteFactory, **groups: Any) -> Site:
    return make_site(["n1", "n2"], clock=FakeClock(),
                     reboot={"soft_timeout": 5.0, "lease_seconds": 30.0}, **groups)


def test_unkeyed_reboot_power_cycles_once_and_records_both_timestamps(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site)
    drive(site)
    after = state(site)
    assert calls(site, "graceful") == 1 and calls(site, "power_on") == 1
    assert calls(site, "force_off") == 0
    assert after["requests"] == [] and site.oob.power[site.address("n1")] == "on"
    assert after["pending_reboot_since"] and after["last_powered_on"]
    assert after["last_powered_on"] > after["pending_reboot_since"]
    drive(site)
    assert calls(site, "power_on") == 1


def test_keyed_request_holds_the_node_off_until_released(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site, key="remediation", value={"machine": "uid-1"})
    drive(site, 20)
    assert site.oob.power[site.address("n1")] == "off"
    assert state(site)["requests"][0]["value"] == {"machine": "uid-1"}
    site.runtime.node_service.delete_reboot(CTX, "n1", "remediation", site.href)
    drive(site)
    assert site.oob.power[site.address("n1")] == "on" and state(site)["last_powered_on"]


def test_two_keyed_clients_must_both_release(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site, key="a")
    request(site, key="b")
    drive(site)
    site.runtime.node_service.delete_reboot(CTX, "n1", "a", site.href)
    drive(site)
    assert site.oob.power[site.address("n1")] == "off"
    site.runtime.node_service.delete_reboot(CTX, "n1", "b", site.href)
    drive(site)
    assert site.oob.power[site.address("n1")] == "on"
    assert calls(site, "power_on") == 1


def test_hard_wins_over_soft(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site, key="a", mode="soft")
    request(site, key="b", mode="hard")
    drive(site)
    assert calls(site, "force_off") == 1 and calls(site, "graceful") == 0


def test_soft_falls_back_to_hard_when_graceful_shutdown_does_not_finish(
        make_site: SiteFactory):
    site = soft_site(make_site)
    site.oob.ignore_graceful.add(site.address("n1"))
    request(site)
    drive(site, 3)
    assert calls(site, "graceful") == 1 and calls(site, "force_off") == 0
    drive(site, 10, step=1.0)
    assert calls(site, "force_off") == 1
    assert site.oob.power[site.address("n1")] == "on" and state(site)["requests"] == []


def test_requests_are_cleared_when_the_node_is_torn_down(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site, key="a")
    drive(site)
    task = run_task(site, "destroy_nodes", {"filter_set_type": "union",
                                           "filter_set": [{"node_names": ["n1"]}]})
    assert task["result"]["status"] == "success"
    after = state(site)
    assert after["requests"] == [] and after["pending_reboot_since"] is None
    drive(site)
    assert calls(site, "power_on") == 0


def test_requests_wait_for_a_running_deploy_task(make_site: SiteFactory):
    site = soft_site(make_site)
    site.runtime.service.create({"action": "deploy_nodes", "design_ref": site.href,
                                 "node_filter": None}, CTX, None)
    request(site)
    drive(site)
    assert calls(site, "graceful") == 0


def test_exactly_one_reconciler_acts_on_a_node(make_site: SiteFactory):
    site = soft_site(make_site)
    rt = site.runtime
    other = RebootReconciler(rt.nodes, site.oob, rt.loader.design, rt.store.latest_design_ref,
                             RebootSettings(soft_timeout=5.0), "other-replica", site.clock)
    request(site, key="hold")
    assert rt.reconciler.pass_once() == 1
    assert other.pass_once() == 0
    site.clock.advance(31)  # the first replica died: its lease expires
    assert other.pass_once() == 1


def test_node_view_carries_reboot_timestamps(make_site: SiteFactory):
    site = soft_site(make_site)
    request(site)
    drive(site)
    node = site.runtime.inventory.node(CTX, "n1", site.href)
    assert node["pending_reboot_since"] and node["last_powered_on"]
    assert node["power_state"] == "on" and node["retired"] is False


def test_reboot_phase_table_allows_only_the_reboot_cycle():
    import pytest

    from common.workflow import IllegalTransition
    from drydock_api.nodes.reboot import TRANSITIONS, Phase, enter

    values: dict[str, Any] = {}
    path = [Phase.IDLE, Phase.SOFT, Phase.HARD, Phase.OFF, Phase.ON, Phase.IDLE]
    for current, target in zip(path, path[1:], strict=False):
        enter(current, target, values, 1.0)
    assert values == {"shutdown_mode": None, "shutdown_started": None}
    assert Phase.ON not in TRANSITIONS[Phase.SOFT] | TRANSITIONS[Phase.HARD]
    with pytest.raises(IllegalTransition):
        enter(Phase.HARD, Phase.SOFT, values, 1.0)
    with pytest.raises(IllegalTransition):
        enter(Phase.IDLE, Phase.ON, values, 1.0)


def test_an_unkeyed_request_posted_while_a_keyed_one_holds_the_node_off_is_removed(
        make_site: SiteFactory):
    site = soft_site(make_site)
    request(site, key="fencing")
    drive(site)
    assert site.oob.power[site.address("n1")] == "off"
    request(site)  # unkeyed, while the node is held off
    drive(site)
    assert [r["key"] for r in state(site)["requests"]] == ["fencing"]  # the unkeyed one acted
    site.runtime.node_service.delete_reboot(CTX, "n1", "fencing", site.href)
    drive(site)
    assert site.oob.power[site.address("n1")] == "on"
    assert state(site)["requests"] == [] and calls(site, "power_on") == 1


def test_a_reboot_that_cannot_act_says_why_in_the_node_view(make_site: SiteFactory):
    site = soft_site(make_site)
    site.runtime.nodes.add_reboot("n1", "", "soft", None, "admin", None)  # no design known
    drive(site, 2)
    view = site.runtime.inventory.node(CTX, "n1", site.href)
    assert view["reboot_error"].startswith("no site design is known")
    assert state(site)["reboot_error"] == view["reboot_error"]
    site.oob.unreachable.add(site.address("n1"))
    site.runtime.nodes.update("n1", design_ref=site.href)
    drive(site, 2)
    assert "did not answer" in state(site)["reboot_error"]
    site.oob.unreachable.clear()
    drive(site)
    assert state(site)["reboot_error"] is None and calls(site, "power_on") == 1


class FakeShipyard:
    def __init__(self, href: str) -> None:
        self.href = href
        self.asked = 0

    def request(self, method: str, path: str, *, ctx: Any = None) -> Any:
        self.asked += 1
        assert (method, path) == ("GET", "/api/v1.0/revisions")
        return {"count": 2, "results": [{"id": 1, "tags": ["committed"]}, {"id": 2, "tags": []}]}


def test_without_any_task_the_reconciler_uses_shipyards_committed_design(
        make_site: SiteFactory):
    from common.clients.shipyard import ShipyardClient
    from drydock_api.nodes.sitedesign import SiteDesign
    site = soft_site(make_site)
    shipyard = FakeShipyard(site.href)
    source = SiteDesign(ShipyardClient(shipyard),  # type: ignore[arg-type]
                        "http://shipyard:9000", lambda: None)
    assert source() == ("deckhand+http://shipyard:9000/api/v1.0/revisions/1/"
                        "rendered-documents")
    assert source() and shipyard.asked == 1  # cached
    resolved: list[Any] = []

    def designs(ref: Any, ctx: RequestContext) -> Any:
        resolved.append(ref)
        return site.runtime.loader.design(site.href, ctx)

    reconciler = RebootReconciler(site.runtime.nodes, site.oob, designs, source,
                                  RebootSettings(soft_timeout=5.0), "r1", site.clock or (
                                      lambda: 0.0))
    site.runtime.nodes.add_reboot("n1", "", "soft", None, "admin", None)
    for _ in range(10):
        reconciler.pass_once()
        assert site.clock is not None
        site.clock.advance(0.1)
    assert resolved[0].endswith("/revisions/1/rendered-documents")
    assert calls(site, "graceful") == 1 and calls(site, "power_on") == 1
