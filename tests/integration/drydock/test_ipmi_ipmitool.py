"""Drydock's IPMI driver (ipmitool in a subprocess) against the site's pyghmi BMC: power reaches
the site, and every failure ends in bounded time as an OobError saying what happened: the BMC
gone, the credentials refused, datagrams lost on the way."""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator

import pytest

from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.ports import BmcAccess, OobError
from sitesim.bmc.ipmi import PyghmiBmcs
from sitesim.bmc.lossy import LossyProxy
from sitesim.model import SiteModel
from sitesim.ports import free_port
from sitesim.scheduler import Scheduler
from sitesim.siteconfig import parse_site
from tests.support.procs import wait_until

pytestmark = pytest.mark.skipif(shutil.which("ipmitool") is None,
                                reason="ipmitool is not installed (make debs)")
USER, PASSWORD = "admin", "ipmitool-it-pw"
SITE = {"site": "ipmitool-it", "region": "r", "workloads": False,
        "timings": {"power": 0.01, "graceful_shutdown": 0.01},
        "defaults": {"state": "deployed", "bmc": {"user": USER, "password": PASSWORD}},
        "nodes": [{"name": "ipmi-x", "rack": "rack01", "bmc": {"type": "ipmi",
                                                               "impl": "pyghmi"}}]}


@pytest.fixture
def site() -> Iterator[tuple[SiteModel, BmcAccess]]:
    spec = parse_site(SITE, source="ipmitool-it")
    scheduler = Scheduler()
    model = SiteModel(spec, scheduler)
    bmcs = PyghmiBmcs(model, [(spec.nodes[0], free_port(socket.SOCK_DGRAM))])
    bmcs.start()
    try:
        yield model, BmcAccess("ipmi", "127.0.0.1", bmcs.ports["ipmi-x"], USER, PASSWORD)
    finally:
        bmcs.stop()
        scheduler.stop()


def test_power_off_and_on_reach_the_site(site: tuple[SiteModel, BmcAccess]) -> None:
    model, bmc = site
    driver = IpmiDriver()
    assert driver.power_state(bmc) == "on"
    driver.power_off(bmc, graceful=False)
    wait_until(lambda: not model.is_on("ipmi-x"), timeout=10, what="the node off")
    assert driver.power_state(bmc) == "off"
    driver.set_pxe_boot(bmc)
    driver.power_cycle(bmc)  # off: powered on
    wait_until(lambda: model.is_on("ipmi-x"), timeout=10, what="the node on")
    assert model.boot_device("ipmi-x") == "pxe"


def test_a_bmc_that_is_gone_is_a_transient_error_in_bounded_time() -> None:
    gone = BmcAccess("ipmi", "127.0.0.1", free_port(socket.SOCK_DGRAM), USER, PASSWORD)
    start = time.monotonic()
    with pytest.raises(OobError) as err:
        IpmiDriver(retries=1, timeout=8).power_state(gone)
    assert time.monotonic() - start < 8 + 30  # bounded by its timeout
    assert err.value.transient and "did not answer power state" in err.value.message


def test_a_wrong_password_is_refused_at_once_and_not_retried(
        site: tuple[SiteModel, BmcAccess]) -> None:
    model, bmc = site
    wrong = BmcAccess("ipmi", bmc.address, bmc.port, USER, "not-the-password")
    start = time.monotonic()
    with pytest.raises(OobError) as err:
        IpmiDriver().power_off(wrong, graceful=False)
    assert time.monotonic() - start < 25  # at once: a silent BMC costs 30 s
    assert not err.value.transient and "refused the credentials" in err.value.message
    assert "not-the-password" not in err.value.message
    time.sleep(0.1)
    assert model.is_on("ipmi-x")


def test_calls_through_a_lossy_link_succeed_or_fail_in_bounded_time(
        site: tuple[SiteModel, BmcAccess]) -> None:
    _, bmc = site
    relay = LossyProxy(("127.0.0.1", bmc.port), 0.2)
    lossy = BmcAccess("ipmi", "127.0.0.1", relay.port, USER, PASSWORD)
    driver = IpmiDriver(timeout=20)
    answers: list[str] = []
    try:
        for _ in range(4):
            start = time.monotonic()
            try:
                answers.append(driver.power_state(lossy))
            except OobError as exc:
                assert exc.transient, exc.message
            assert time.monotonic() - start < 20 + 30  # its timeout bounds the call
    finally:
        relay.close()
    assert relay.dropped and answers and set(answers) == {"on"}
