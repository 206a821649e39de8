"""Reboot requests with a power policy on the site's real BMCs: each request records what it
got; soft-only fails cleanly on a host that ignores ACPI."""

from __future__ import annotations

import time

import pytest

from tests.integration.drydock.lifecycle import LifecycleEnv
from tests.integration.drydock.test_reboot_retire import calls, power, reboot, requests_of

pytestmark = pytest.mark.slow


def test_a_keyed_reboot_of_an_ipmi_host_ignoring_acpi_is_forced_and_says_after_how_long(
        lc_env: LifecycleEnv):
    reboot(lc_env, "lc-pp-b", key="maint", grace_period=0.4)
    lc_env.until(lambda: power(lc_env, "lc-pp-b") == "off", what="lc-pp-b off")
    # the request's record and the node's are written, and read, at once
    state = lc_env.until(lambda: (s := requests_of(lc_env, "lc-pp-b"))["requests"][0]["power"]
                         and s, what="the request's record")
    got = state["requests"][0]["power"]
    assert got["outcome"] == "forced" and got["grace_period_from"] == "request"
    assert got["forced_after"] >= 0.4 and state["last_power_off"]["outcome"] == "forced"
    assert calls(lc_env, "ipmi", "graceful_shutdown", "lc-pp-b") == 1
    assert calls(lc_env, "ipmi", "power_off", "lc-pp-b") == 1
    assert lc_env.api("DELETE", "/nodes/lc-pp-b/reboot/maint").status_code == 204
    lc_env.until(lambda: power(lc_env, "lc-pp-b") == "on", what="lc-pp-b on again")


def test_a_soft_only_reboot_of_a_host_ignoring_acpi_fails_and_is_not_retried(
        lc_env: LifecycleEnv):
    reboot(lc_env, "lc-pp-a", power_policy="soft-only", grace_period=0.3)
    state = lc_env.until(lambda: (s := requests_of(lc_env, "lc-pp-a"))["reboot_error"] and s,
                         what="the soft-only failure")
    assert "soft-only forbids forcing" in state["reboot_error"]
    assert state["last_power_off"]["outcome"] == "not-off" and state["requests"] == []
    assert state["pending_reboot_since"] is None
    time.sleep(0.5)  # more reconciler passes: the failed request is not retried
    assert power(lc_env, "lc-pp-a") == "on"
    assert calls(lc_env, "redfish", "graceful_shutdown", "lc-pp-a") == 1
    assert calls(lc_env, "redfish", "power_off", "lc-pp-a") == 0
