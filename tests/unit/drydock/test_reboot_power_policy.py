"""Reboot requests with a power policy: what each request got, the grace period's source,
soft-only failing cleanly, hard skipping the graceful shutdown."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import BerthError
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory
from tests.unit.drydock.test_reboot import CTX, calls, drive, request, state


def policy_site(make_site: SiteFactory, grace: float | None = None) -> Site:
    docs = designs.simple_site(["n1", "n2"])
    if grace is not None:
        region = next(d for d in docs if d["schema"] == "drydock/Region/v1")
        region["data"]["power"] = {"grace_period": grace}
    return make_site(["n1", "n2"], docs=docs, clock=FakeClock(),
                     reboot={"soft_timeout": 50.0, "lease_seconds": 30.0})


def test_a_node_ignoring_the_shutdown_is_forced_after_the_design_grace_and_says_so(
        make_site: SiteFactory):
    site = policy_site(make_site, grace=3.0)
    site.oob.ignore_graceful.add(site.address("n1"))
    request(site, key="fencing")
    drive(site, 10, step=1.0)
    got = state(site)
    assert calls(site, "graceful") == 1 and calls(site, "force_off") == 1
    power = got["requests"][0]["power"]
    assert power["outcome"] == "forced" and 3.0 <= power["forced_after"] < 5.0
    assert power["grace_period_from"] == "design" and power["grace_period"] == 3.0
    assert got["last_power_off"] == power


def test_the_request_grace_overrides_the_design(make_site: SiteFactory):
    site = policy_site(make_site, grace=300.0)
    site.oob.ignore_graceful.add(site.address("n1"))
    request(site, key="k", grace_period=2)
    drive(site, 6, step=1.0)
    power = state(site)["requests"][0]["power"]
    assert power["grace_period_from"] == "request" and power["outcome"] == "forced"
    assert power["forced_after"] < 4.0


def test_hard_on_request_skips_the_graceful_shutdown(make_site: SiteFactory):
    site = policy_site(make_site)
    request(site, key="k", power_policy="hard")
    drive(site, 3)
    assert calls(site, "graceful") == 0 and calls(site, "force_off") == 1
    req = state(site)["requests"][0]
    assert req["mode"] == "hard" and req["power"]["outcome"] == "hard"


def test_an_unkeyed_graceful_reboot_is_recorded_on_the_node(make_site: SiteFactory):
    site = policy_site(make_site)
    request(site)
    drive(site)
    got = state(site)
    assert got["requests"] == [] and got["last_power_off"]["outcome"] == "graceful"
    assert got["last_power_off"]["grace_period_from"] == "config"


def test_soft_only_fails_cleanly_when_the_node_stays_on(make_site: SiteFactory):
    site = policy_site(make_site)
    site.oob.ignore_graceful.add(site.address("n1"))
    request(site, key="maint", power_policy="soft-only", grace_period=2)
    drive(site, 8, step=1.0)
    got = state(site)
    assert calls(site, "force_off") == 0 and calls(site, "graceful") == 1
    assert site.oob.power.get(site.address("n1"), "on") == "on"
    assert got["requests"][0]["power"]["outcome"] == "not-off"
    assert "soft-only forbids forcing" in got["reboot_error"]
    assert got["pending_reboot_since"] is None
    drive(site, 8, step=1.0)  # the failed request is not retried
    assert calls(site, "graceful") == 1 and "soft-only" in state(site)["reboot_error"]
    request(site, key="maint", power_policy="hard")  # posting it again acts again
    drive(site, 3)
    assert calls(site, "force_off") == 1
    assert state(site)["requests"][0]["power"]["outcome"] == "hard"


@pytest.mark.parametrize("body, problem", [
    ({"power_policy": "nice"}, "power_policy must be one of soft-then-hard, soft-only, hard"),
    ({"grace_period": True}, "grace_period must be a number"),
    ({"mode": "soft", "power_policy": "hard"}, "mode soft contradicts power_policy hard"),
    ({"power_policy": "hard", "grace_period": 3}, "grace_period is not used with"),
])
def test_bad_policy_fields_are_refused_and_change_nothing(make_site: SiteFactory,
                                                          body: dict[str, Any], problem: str):
    site = policy_site(make_site)
    with pytest.raises(BerthError) as err:
        site.runtime.node_service.add_reboot(CTX, "n1", body, site.href)
    assert err.value.code == 400 and problem in str(err.value.messages)
    assert state(site)["requests"] == []
