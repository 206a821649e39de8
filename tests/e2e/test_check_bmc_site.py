"""The BMC check as an operator runs it before enrolling a node, against the BMCs of the site
`make run` starts: `drydock node check-bmc` passes a node's Redfish BMC of the running site
with Drydock's profile, and fails one that offers no ForceOff (the same BMC behind a filter),
naming the requirement and what Drydock could not do."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sitesim.ports import free_port
from sitesim.servers import ServerThread
from tests.fixtures.services import Berth
from tests.support.redfish_bmc import HideResetTypes

pytestmark = pytest.mark.slow

DRYDOCK = Path(sys.executable).parent / "drydock"
NODE = "node04"


class Forward:
    """WSGI app forwarding every request to `base` (the site's Redfish BMC)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        query = environ.get("QUERY_STRING")
        resp = requests.request(
            environ["REQUEST_METHOD"],
            self.base + environ.get("PATH_INFO", "/") + (f"?{query}" if query else ""),
            data=environ["wsgi.input"].read(length) if length else None,
            headers={k[5:].replace("_", "-").title(): v for k, v in environ.items()
                     if k.startswith("HTTP_") and k not in ("HTTP_HOST", "HTTP_CONNECTION")}
            | ({"Content-Type": environ["CONTENT_TYPE"]} if environ.get("CONTENT_TYPE")
               else {}), timeout=30, allow_redirects=False)
        skip = {"content-length", "transfer-encoding", "connection", "content-encoding"}
        start_response(f"{resp.status_code} {resp.reason}",
                       [(k, v) for k, v in resp.headers.items() if k.lower() not in skip]
                       + [("Content-Length", str(len(resp.content)))])
        return [resp.content]


@pytest.fixture(scope="module")
def without_force_off(berth: Berth) -> Iterator[str]:
    """The site's Redfish BMC as a BMC that cannot force a node off would show it."""
    server = ServerThread(HideResetTypes(Forward(berth.site.urls["redfish"]), "ForceOff"),
                          free_port(), name="redfish-no-forceoff").start()
    try:
        yield server.url
    finally:
        server.shutdown()


def check_bmc(berth: Berth, address: str, node: str) -> subprocess.CompletedProcess[str]:
    """`drydock node check-bmc` with the node's BMC account and System, as the design has."""
    spec = berth.site.spec.node(node)
    system = berth.sim(f"/nodes/{node}")["bmc"]["system_id"]
    return subprocess.run(
        [str(DRYDOCK), "-o", "json", "node", "check-bmc", "--address", address,
         "--username", spec.bmc.user, "--password", spec.bmc.password, "--system", system],
        capture_output=True, text=True, timeout=300)


def test_check_bmc_passes_a_bmc_of_the_running_site(berth: Berth) -> None:
    done = check_bmc(berth, berth.site.urls["redfish"], NODE)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] is True and report["counts"]["FAIL"] == 0
    passed = [r["requirement"] for r in report["requirements"] if r["result"] == "PASS"]
    for needed in ("#Drive.SecureErase", "#ComputerSystem.Reset", "BootSourceOverrideTarget"):
        assert any(needed in p for p in passed), (needed, passed)


def test_check_bmc_fails_a_bmc_without_force_off_naming_the_requirement(
        berth: Berth, without_force_off: str) -> None:
    done = check_bmc(berth, without_force_off, NODE)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    failed = [r for r in report["requirements"] if r["result"] == "FAIL"]
    assert [r["requirement"] for r in failed] == [
        "/Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues"], failed
    assert "missing: ForceOff" in failed[0]["message"]
    # the check changed nothing at the site: the node is still on and in service
    seen = berth.sim(f"/nodes/{NODE}")
    assert seen["power"] == "on" and seen["kubernetes"]["ready"]
