"""Drydock's Redfish profile against the site's sushy-tools BMC: DMTF's validator (its own
console script) and `drydock node check-bmc` pass a BMC that has what Drydock needs, fail one
that lacks Drive.SecureErase or a reset type naming what is missing, and say clearly when a
BMC cannot be checked at all (exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sitesim.ports import free_port
from tests.support.redfish_bmc import HideResetTypes, SiteBmc, site_bmc

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
PROFILE = ROOT / "etc" / "redfish" / "drydock-profile.json"
SITE = Path(__file__).with_name("site.yaml")
BIN = Path(sys.executable).parent
OK, NOERASE = ("admin", "ok-pw"), ("admin", "noerase-pw")


@dataclass
class Bmcs:
    site: SiteBmc
    no_force_off: str  # the same BMC behind a filter that hides the ForceOff reset type


@pytest.fixture(scope="module")
def bmcs() -> Iterator[Bmcs]:
    with site_bmc(SITE) as site:
        hidden = site.serve(HideResetTypes(site.app, "ForceOff"))
        try:
            yield Bmcs(site, hidden.url)
        finally:
            hidden.shutdown()


def validator(url: str, account: tuple[str, str], logdir: Path) -> tuple[int, str, str]:
    """DMTF's console script with Drydock's profile: exit code, console, debug log."""
    done = subprocess.run(
        [str(BIN / "rf_interop_validator"), "--authtype", "Basic", "-u", account[0],
         "-p", account[1], "-r", url, "--logdir", str(logdir), str(PROFILE)],
        capture_output=True, text=True, timeout=300, cwd=logdir)
    log = "\n".join(p.read_text() for p in logdir.rglob("RedfishInteropValidatorDebug_*.log"))
    return done.returncode, done.stdout, log


def totals(console: str) -> dict[str, int]:
    """The validator's summary table: PASS, WARN, FAIL, NOT TESTED."""
    rows = [line for line in console.splitlines() if re.match(r"^\|\s*\d", line)]
    assert rows, console
    values = [int(v) for v in re.findall(r"\d+", rows[-1])]
    return dict(zip(("PASS", "WARN", "FAIL", "NOT TESTED"), values, strict=True))


def drydock(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "drydock"), *args], capture_output=True, text=True,
                          timeout=300)


def check(url: str, account: tuple[str, str], *extra: str,
          output: str = "table") -> subprocess.CompletedProcess[str]:
    return drydock("-o", output, "node", "check-bmc", "--address", url,
                   "--username", account[0], "--password", account[1], *extra)


def test_validator_passes_the_sites_bmc_with_the_profile(bmcs: Bmcs, tmp_path: Path):
    code, console, log = validator(bmcs.site.url, OK, tmp_path)
    assert code == 0, console
    counts = totals(console)
    assert counts["FAIL"] == 0 and counts["PASS"] > 20, counts
    assert "Action present" in log  # Reset and Drive.SecureErase were found


def test_validator_fails_a_bmc_without_secure_erase_naming_it(bmcs: Bmcs, tmp_path: Path):
    code, console, log = validator(bmcs.site.url, NOERASE, tmp_path)
    assert code == 1, console
    assert totals(console)["FAIL"] >= 1
    fails = [line for line in log.splitlines() if " FAIL - " in line]
    assert fails and all("/Actions/#Drive.SecureErase" in f for f in fails), fails
    assert "The action 'SecureErase' is mandatory" in fails[0]


def test_validator_fails_a_bmc_missing_a_reset_type_naming_it(bmcs: Bmcs, tmp_path: Path):
    code, console, log = validator(bmcs.no_force_off, OK, tmp_path)
    assert code == 1, console
    fails = [line for line in log.splitlines() if " FAIL - " in line]
    assert fails and all("ResetType@Redfish.AllowableValues" in f for f in fails), fails


def test_check_bmc_passes_the_sites_bmc(bmcs: Bmcs, tmp_path: Path):
    done = check(bmcs.site.url, OK, "--system", bmcs.site.system("bmc-ok"),
                 "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = list(tmp_path.glob("RedfishInteropValidatorReport_*.html"))
    assert report and "BerthDrydock" in report[0].read_text()  # the validator's own report
    assert "PASS: the BMC meets every mandatory requirement" in done.stdout
    rows = {line.split("│")[2].strip(): line.split("│")[1].strip()
            for line in done.stdout.splitlines() if line.count("│") >= 3}
    for requirement in ("Drive /Actions/#Drive.SecureErase",
                        "ComputerSystem /Actions/#ComputerSystem.Reset",
                        "ComputerSystem /Boot/BootSourceOverrideTarget",
                        "TaskService /Tasks"):
        assert rows.get(requirement) == "PASS", (requirement, rows)


def test_check_bmc_reads_only_the_systems_the_account_may(bmcs: Bmcs):
    done = check(bmcs.site.url, OK, output="json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] is True and report["counts"]["FAIL"] == 0
    assert report["systems"] == [f"/redfish/v1/Systems/{bmcs.site.system('bmc-ok')}"]


def test_check_bmc_fails_a_bmc_without_secure_erase_naming_it(bmcs: Bmcs):
    done = check(bmcs.site.url, NOERASE, "--system", bmcs.site.system("bmc-noerase"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("FAIL: 1 requirement(s) not met: Drive /Actions/#Drive.SecureErase"
            in done.stdout), done.stdout
    assert "The action 'SecureErase' is mandatory" in done.stdout
    # and what Drydock cannot do on it, in the profile's words
    assert "- Drive /Actions/#Drive.SecureErase: Erasing one disk alone" in done.stdout


def test_check_bmc_names_the_reset_type_a_bmc_lacks(bmcs: Bmcs):
    done = check(bmcs.no_force_off, OK, "--system", bmcs.site.system("bmc-ok"),
                 output="json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    failed = [r for r in report["requirements"] if r["result"] == "FAIL"]
    assert [r["requirement"] for r in failed] == [
        "/Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues"], failed
    assert "missing: ForceOff" in failed[0]["message"]


def test_check_bmc_of_an_unreachable_bmc_exits_2():
    done = check(f"http://127.0.0.1:{free_port()}", OK, "--timeout", "3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unreachable: [Errno 111] Connection refused" in done.stderr, done.stderr
    assert not done.stdout


def test_check_bmc_with_refused_credentials_exits_2(bmcs: Bmcs):
    done = check(bmcs.site.url, ("admin", "wrong"), "--system", bmcs.site.system("bmc-ok"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refused the credentials" in done.stderr


def test_the_enrolment_check_names_what_a_design_bmc_lacks(bmcs: Bmcs):
    """What Drydock's enlist step runs with [oob] bmc_check (the node's BMC as the design
    has it): [] for the site's BMC, the missing SecureErase named for the other."""
    from urllib.parse import urlsplit

    from drydock_api.drivers.ports import BmcAccess
    from drydock_api.drivers.redfish.check import against_profile

    port = int(urlsplit(bmcs.site.url).port or 0)

    def access(node: str, account: tuple[str, str]) -> BmcAccess:
        return BmcAccess("redfish", "127.0.0.1", port, account[0], account[1],
                         system_id=bmcs.site.system(node))

    assert against_profile(access("bmc-ok", OK)) == []
    failed = against_profile(access("bmc-noerase", NOERASE))
    assert len(failed) == 1 and failed[0].startswith("Drive /Actions/#Drive.SecureErase"), failed
