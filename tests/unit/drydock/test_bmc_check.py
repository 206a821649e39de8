"""The BMC check's own logic: addresses, one verdict per requirement, the profile's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drydock_api.drivers.redfish.check import normalize, purpose, summarize
from drydock_api.drivers.redfish.interop import Finding

PROFILE = json.loads((Path(__file__).resolve().parents[3] / "etc" / "redfish"
                      / "drydock-profile.json").read_text())


@pytest.mark.parametrize(("given", "expected"), [
    ("10.0.0.5", "https://10.0.0.5"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
    ("https://bmc.example/redfish/v1", "https://bmc.example"),
])
def test_an_address_gets_a_scheme_and_loses_the_redfish_root(given, expected):
    assert normalize(given) == expected


def test_a_requirement_takes_its_worst_result_and_where_it_was_found():
    rows = summarize([
        Finding("Drive", "/Actions/#Drive.SecureErase", "PASS", "Action present", "/d/sda"),
        Finding("Drive", "/Actions/#Drive.SecureErase", "FAIL", "mandatory", "/d/sdb"),
        Finding("Drive", "/Actions/#Drive.SecureErase", "FAIL", "mandatory", "/d/sdc"),
        Finding("Drive", "/Id", "PASS", "Property present", "/d/sda"),
        Finding("Task", "", "SKIP", "Resource not found"),
    ], PROFILE)
    assert [(r.name, r.result) for r in rows] == [
        ("Drive /Actions/#Drive.SecureErase", "FAIL"), ("Drive /Id", "PASS"), ("Task", "SKIP")]
    assert rows[0].uris == ("/d/sdb", "/d/sdc") and rows[0].message == "mandatory"
    assert rows[0].purpose.startswith("Erasing one disk alone")


@pytest.mark.parametrize(("resource", "requirement", "start"), [
    ("ComputerSystem", "/Actions/#ComputerSystem.Reset", "Every power change"),
    ("ComputerSystem", "/Boot/BootSourceOverrideTarget (Write)", "Set to Pxe"),
    ("Task", "/Messages/2/Message", "Shown to the operator"),
    ("StorageCollection", "", "The node's storage subsystems"),
    ("Chassis", "/Id", ""),
])
def test_a_requirement_is_explained_in_the_profiles_words(resource, requirement, start):
    said = purpose(PROFILE, resource, requirement)
    assert said.startswith(start) and (said or not start)
