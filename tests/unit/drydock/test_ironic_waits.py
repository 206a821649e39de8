"""The Ironic client's waits on a fake clock: a 409 NodeLocked retried with a doubling, capped
pause a bounded number of times; provision and power waits that end on the state asked for, on
Ironic's failure, or at their deadline, each with a reason naming what was seen."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from drydock_api.drivers.ironic.client import (
    IronicClient,
    IronicError,
    IronicRefused,
    IronicSettings,
    IronicStateError,
)

LOCKED_BODY = json.dumps({"error_message": json.dumps({
    "faultstring": "Node node01 is locked by host conductor-1, please retry after the "
                   "current operation is completed."})})


class Clock:
    def __init__(self) -> None:
        self.now, self.slept = 1000.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class Answer:
    status_code: int
    text: str = ""

    def json(self) -> Any:
        return json.loads(self.text)


def sdk_node(**fields: Any) -> SimpleNamespace:
    base = dict(id="uuid-1", name="node01", provision_state="available",
                target_provision_state=None, power_state="power off", target_power_state=None,
                is_maintenance=False, maintenance_reason=None, last_error=None,
                is_retired=False, retired_reason=None, driver="redfish", deploy_interface="",
                inspect_interface="", instance_id=None, is_automated_clean_enabled=False,
                reservation=None, driver_info={}, extra={})
    return SimpleNamespace(**{**base, **fields})


@dataclass
class Proxy:
    """openstacksdk's baremetal proxy as the client uses it: scripted answers and states."""

    answers: list[Answer] = field(default_factory=list)
    states: list[SimpleNamespace] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)

    def request(self, path: str, method: str, **_: Any) -> Answer:
        self.sent.append((method, path))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def get_node(self, name: str) -> SimpleNamespace:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


def client(proxy: Proxy, clock: Clock, **settings: Any) -> IronicClient:
    return IronicClient(proxy, IronicSettings(**settings), sleep=clock.sleep, clock=clock)


def test_a_locked_node_is_asked_again_after_doubling_pauses_until_ironic_answers() -> None:
    clock = Clock()
    proxy = Proxy([Answer(409, LOCKED_BODY)] * 4 + [Answer(200, '{"ok": true}')])
    ironic = client(proxy, clock, lock_retries=8, lock_backoff=0.5, lock_backoff_max=4.0)
    assert ironic._request("PATCH", "/nodes/node01", []) == {"ok": True}
    assert clock.slept == [0.5, 1.0, 2.0, 4.0]
    assert ironic.lock_waits == 4 and len(proxy.sent) == 5


def test_a_node_still_locked_after_the_retries_fails_transient_with_ironics_words() -> None:
    clock = Clock()
    proxy = Proxy([Answer(409, LOCKED_BODY)])
    ironic = client(proxy, clock, lock_retries=5, lock_backoff=1.0, lock_backoff_max=3.0)
    with pytest.raises(IronicError) as err:
        ironic._request("PATCH", "/nodes/node01", [])
    assert len(proxy.sent) == 6  # the first request and five retries, no more
    assert clock.slept == [1.0, 2.0, 3.0, 3.0, 3.0]  # capped
    assert ironic.lock_waits == 5
    assert err.value.transient
    assert "PATCH /nodes/node01: node still locked after 5 retries" in err.value.message
    assert "locked by host conductor-1" in err.value.message


def test_another_conflict_is_refused_at_once() -> None:
    clock = Clock()
    proxy = Proxy([Answer(409, json.dumps({"error_message": json.dumps(
        {"faultstring": "Node node01 is in state available"})}))])
    with pytest.raises(IronicRefused) as err:
        client(proxy, clock)._request("PATCH", "/nodes/node01", [])
    assert clock.slept == [] and len(proxy.sent) == 1
    assert "(409): Node node01 is in state available" in err.value.message


def test_a_provision_wait_ends_when_the_state_is_reached_with_no_target() -> None:
    clock = Clock()
    proxy = Proxy(states=[sdk_node(provision_state="deploying", target_provision_state="active"),
                          sdk_node(provision_state="active", target_provision_state="active"),
                          sdk_node(provision_state="active")])
    node = client(proxy, clock, poll=2.0).wait_provision("node01", {"active"}, doing="active")
    assert node.provision_state == "active"
    assert clock.slept == [2.0, 2.0]


def test_a_failure_state_ends_the_provision_wait_with_last_error() -> None:
    clock = Clock()
    proxy = Proxy(states=[sdk_node(provision_state="deploying", target_provision_state="active"),
                          sdk_node(provision_state="deploy failed", last_error="boot failed")])
    with pytest.raises(IronicStateError) as err:
        client(proxy, clock, poll=2.0).wait_provision("node01", {"active"}, doing="active")
    assert not err.value.transient
    assert err.value.message == ("node01: active stopped: provision_state 'deploy failed', "
                                 "last_error: boot failed")


def test_a_provision_wait_gives_up_at_its_deadline_naming_the_state_seen() -> None:
    clock = Clock()
    proxy = Proxy(states=[sdk_node(provision_state="clean wait",
                                   target_provision_state="available")])
    with pytest.raises(IronicStateError) as err:
        client(proxy, clock, poll=2.0).wait_provision("node01", {"available"},
                                                      doing="deleted", timeout=5)
    assert clock.now == 1005.0 and clock.slept == [2.0, 2.0, 1.0]
    assert err.value.transient
    assert err.value.message == ("node01: deleted did not reach available in 5s: "
                                 "provision_state 'clean wait', target 'available'")


def test_a_power_wait_ends_on_the_state_or_on_ironics_error_or_at_the_deadline() -> None:
    clock = Clock()
    moving = sdk_node(power_state="power on", target_power_state="power off")
    proxy = Proxy(states=[moving, sdk_node(power_state="power off")])
    assert client(proxy, clock, poll=1.0).wait_power("node01", "power off", 10).power_state \
        == "power off"
    assert clock.slept == [1.0]

    proxy = Proxy(states=[moving, sdk_node(power_state="power on",
                                           last_error="soft power off timed out")])
    with pytest.raises(IronicStateError) as err:
        client(proxy, clock, poll=1.0).wait_power("node01", "power off", 10)
    assert err.value.message == ("node01: power 'power off' not reached: "
                                 "soft power off timed out")

    clock = Clock()
    with pytest.raises(IronicStateError) as err:
        client(Proxy(states=[moving]), clock, poll=1.5).wait_power("node01", "power off", 4)
    assert clock.slept == [1.5, 1.5, 1.0] and err.value.transient
    assert err.value.message == "node01: power 'power off' not reached in 4s (power on)"


def test_a_failed_verification_ends_the_manage_wait_at_once_with_ironics_reason() -> None:
    # Ironic returns a node whose verification failed to `enroll`, not to a failure state
    clock = Clock()
    proxy = Proxy(states=[
        sdk_node(provision_state="verifying", target_provision_state="manageable"),
        sdk_node(provision_state="enroll", last_error="Failed to get power state for node")])
    with pytest.raises(IronicStateError) as err:
        client(proxy, clock, poll=2.0).wait_provision("node01", {"manageable"}, doing="manage")
    assert clock.slept == [2.0]
    assert err.value.transient  # a BMC slow to answer fails it too
    assert err.value.message == ("node01: manage failed, back in provision_state 'enroll', "
                                 "last_error: Failed to get power state for node")


def test_enroll_is_not_a_fall_back_for_other_waits() -> None:
    clock = Clock()
    proxy = Proxy(states=[sdk_node(provision_state="enroll")])
    with pytest.raises(IronicStateError) as err:
        client(proxy, clock, poll=2.0).wait_provision("node01", {"available"},
                                                      doing="provide", timeout=3)
    assert "did not reach available in 3s" in err.value.message
