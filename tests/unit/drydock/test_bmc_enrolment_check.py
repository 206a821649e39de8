"""[oob] bmc_check: before a node unknown to MAAS is enrolled (its BMC asked to PXE boot it),
its Redfish BMC is held to Drydock's profile: refuse fails the node naming each failed
requirement, its BMC untouched; warn enrols it with a message naming them; off (the
default) and a BMC that passes change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import BerthError
from drydock_api.drivers.ports import BmcAccess
from tests.unit.drydock.conftest import Site, SiteFactory
from tests.unit.drydock.test_lifecycle import enlist_on_pxe, torn_down
from tests.unit.drydock.test_orchestrator import messages, names, run_task

FORCE_OFF = ("ComputerSystem /Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues "
             "(missing: ForceOff)")


def new_node(make_site: SiteFactory, mode: str | None, verdict: Any) -> tuple[Site, list[str]]:
    """n1 unknown to MAAS, its BMC checked by a stand-in for the profile check."""
    site = make_site(["n1", "n2"], **({"oob": {"bmc_check": mode}} if mode else {}))
    torn_down(site, "n1")
    enlist_on_pxe(site)
    checked: list[str] = []

    def check(bmc: BmcAccess) -> list[str]:
        checked.append(bmc.address)
        if isinstance(verdict, Exception):
            raise verdict
        return list(verdict)

    site.runtime.ports.bmc_check = check
    return site, checked


def test_refuse_fails_the_node_naming_the_requirement_and_leaves_its_bmc_alone(
        make_site: SiteFactory) -> None:
    site, checked = new_node(make_site, "refuse", [FORCE_OFF])
    task = run_task(site, "prepare_nodes", names("n1"))
    assert task["result"]["status"] == "failure"
    text = " ".join(messages(task, "n1"))
    assert "does not meet Drydock's Redfish profile" in text and "missing: ForceOff" in text
    assert "not enrolled ([oob] bmc_check = refuse)" in text
    assert checked == [site.address("n1")]
    assert site.oob.calls[("set_pxe", site.address("n1"))] == 0
    assert site.maas.status("n1") is None  # never enrolled


def test_a_bmc_that_cannot_be_checked_is_refused_too(make_site: SiteFactory) -> None:
    site, _ = new_node(make_site, "refuse", BerthError("BMC 127.0.0.1 refused the credentials"))
    task = run_task(site, "prepare_nodes", names("n1"))
    assert task["result"]["status"] == "failure"
    assert "not checked: BMC 127.0.0.1 refused the credentials" in " ".join(messages(task, "n1"))
    assert site.oob.calls[("set_pxe", site.address("n1"))] == 0


def test_warn_enrols_the_node_with_a_message_naming_the_requirement(
        make_site: SiteFactory) -> None:
    site, checked = new_node(make_site, "warn", [FORCE_OFF])
    task = run_task(site, "prepare_nodes", names("n1"))
    assert task["result"]["status"] == "success", messages(task)
    warned = [m for m in task["result"]["details"]["messageList"]
              if m.get("reason") == "BmcProfileCheckFailed"]
    assert len(warned) == 1 and not warned[0]["error"]
    assert "missing: ForceOff" in warned[0]["message"]
    assert "enrolling it anyway ([oob] bmc_check = warn)" in warned[0]["message"]
    assert checked == [site.address("n1")]  # once, however often the step looked
    assert site.maas.status("n1") == "Ready"


@pytest.mark.parametrize("mode,verdict", [(None, [FORCE_OFF]), ("refuse", [])])
def test_off_or_a_passing_bmc_enrols_as_before(make_site: SiteFactory, mode: str | None,
                                                verdict: list[str]) -> None:
    site, checked = new_node(make_site, mode, verdict)
    task = run_task(site, "prepare_nodes", names("n1"))
    assert task["result"]["status"] == "success", messages(task)
    assert checked == ([] if mode is None else [site.address("n1")])
    assert site.maas.status("n1") == "Ready"
