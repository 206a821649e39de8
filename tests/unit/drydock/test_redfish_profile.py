"""Drydock's Redfish profile and its driver cannot drift apart: the profile is a valid DSP0272
profile stating every entry of the driver's contract, and the contract holds everything the
driver really reads, sends and calls on a BMC (recorded against the site's sushy-tools BMC)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from drydock_api.drivers.ports import BmcAccess
from drydock_api.drivers.redfish.contract import USES, Use
from drydock_api.drivers.redfish.driver import RedfishDriver
from tests.support.redfish_bmc import site_bmc

ROOT = Path(__file__).resolve().parents[3]
PROFILE_PATH = ROOT / "etc" / "redfish" / "drydock-profile.json"
DEMO = ROOT / "etc" / "sites" / "demo.yaml"


def profile() -> dict[str, Any]:
    return dict(json.loads(PROFILE_PATH.read_text()))


def use_cases(resource: str) -> list[dict[str, Any]]:
    entry = profile()["Resources"].get(resource)
    assert entry is not None, f"the profile has no {resource} resource"
    return list(entry.get("UseCases") or [entry])


def find(resource: str, use: Use) -> list[dict[str, Any]]:
    """The profile's requirements for `use` in each use case of its resource."""
    found = []
    for case in use_cases(resource):
        if use.is_action:
            action = use.path.split(".", 1)[1]
            req = (case.get("ActionRequirements") or {}).get(action)
        else:
            req, reqs = None, case.get("PropertyRequirements") or {}
            for name in use.path.split("/"):
                req = reqs.get(name)
                if req is None:
                    break
                reqs = req.get("PropertyRequirements") or {}
        if req is not None:
            found.append({**req, "_case": case})
    return found


def stated_values(resource: str, use: Use, req: dict[str, Any]) -> set[str]:
    """The values the profile holds a BMC to for `use`: a property's Values or
    MinSupportValues; an action's ResetType-style parameter values, which the validator
    checks through the `<Parameter>@Redfish.AllowableValues` of the action object."""
    if not use.is_action:
        return set(req.get("Values") or []) | set(req.get("MinSupportValues") or [])
    params = req.get("Parameters") or {}
    out: set[str] = set()
    for name, param in params.items():
        declared = set(param.get("ParameterValues") or [])
        checked = ((((req["_case"].get("PropertyRequirements") or {}).get("Actions") or {})
                    .get("PropertyRequirements") or {}).get(use.path) or {})
        annotation = ((checked.get("PropertyRequirements") or {})
                      .get(f"{name}@Redfish.AllowableValues") or {})
        out |= declared & set(annotation.get("Values") or [])
    return out


def test_the_profile_is_a_valid_interoperability_profile():
    from redfish_interop_validator.profile_schema import profile_schema as schema
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(profile()))
    assert not errors, [e.message for e in errors]


@pytest.mark.parametrize("use", USES, ids=lambda u: f"{u.resource}:{u.path}")
def test_the_profile_states_each_use_of_the_driver(use: Use):
    found = find(use.resource, use)
    assert found, f"the profile does not state {use.resource} {use.path}"
    for req in found:
        assert set(use.values) <= stated_values(use.resource, use, req), (
            f"{use.resource} {use.path}: the profile must hold the BMC to {use.values}")
        if use.required:
            assert req.get("ReadRequirement", "Mandatory") == "Mandatory", use
            assert req["_case"].get("ReadRequirement", "Mandatory") == "Mandatory", use


class Recorder:
    """WSGI middleware: every request to the BMC, its JSON body and the answer's type."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[tuple[str, str, Any, str | None]] = []
        self.types: dict[str, str] = {}

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        body = b"".join(self.app(environ, start_response))
        path = environ["PATH_INFO"].rstrip("/") or "/"
        try:
            kind = json.loads(body).get("@odata.type") if body else None
        except (ValueError, AttributeError):
            kind = None
        if kind:
            self.types[path] = str(kind).rsplit(".", 1)[-1]
        sent = json.loads(raw) if raw else None
        self.calls.append((environ["REQUEST_METHOD"], path, sent, self.types.get(path)))
        return [body]

    def observed(self) -> set[tuple[str, str, tuple[str, ...]]]:
        """(resource type, property path or #Type.Action, values sent) of each request."""
        out: set[tuple[str, str, tuple[str, ...]]] = set()
        for method, path, sent, kind in self.calls:
            if method == "GET" and kind:
                out.add((kind, "", ()))
            elif method == "POST" and "/Actions/" in path:
                action = path.rsplit("/Actions/", 1)[1]
                resource = action.split(".", 1)[0]
                out.add((resource, f"#{action}", tuple(sorted((sent or {}).values()))))
            elif method == "PATCH":
                for name, value in _flatten(sent or {}):  # null: a property cleared
                    out.add((self.types.get(path, "?"), name,
                             () if value is None else (str(value),)))
        return out


def _flatten(doc: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in doc.items():
        if isinstance(value, dict):
            out += _flatten(value, f"{prefix}{key}/")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_the_contract_holds_everything_the_driver_does_on_a_bmc():
    with site_bmc(DEMO) as bmc:
        recorder = Recorder(bmc.app)
        server = bmc.serve(recorder)
        try:
            node = bmc.nodes["node01"]
            access = BmcAccess("redfish", "127.0.0.1", server.port, node.bmc.user,
                               node.bmc.password, bmc.system("node01"))
            _exercise(RedfishDriver(timeout=5), access, bmc.model)
            # the first System of the collection, when the design names none
            RedfishDriver(timeout=5).power_state(
                BmcAccess("redfish", "127.0.0.1", server.port, node.bmc.user,
                          node.bmc.password))
        finally:
            server.shutdown()
    contract = {(u.resource, u.path): set(u.values) for u in USES}
    resources = {u.resource for u in USES}
    for resource, path, values in sorted(recorder.observed()):
        assert resource in resources, f"the driver reads {resource}, not in the contract"
        if path:
            assert (resource, path) in contract, f"the driver uses {resource} {path}"
            assert set(values) <= contract[(resource, path)], (resource, path, values)
    kinds = {kind for _, _, _, kind in recorder.calls if kind}
    assert {"ComputerSystem", "Drive", "Task", "TaskCollection", "TaskService"} <= kinds


def _exercise(driver: RedfishDriver, access: BmcAccess, model: Any) -> None:
    """Every OobDriver call, as Drydock's steps make them."""
    assert driver.power_state(access) == "on"
    driver.power_cycle(access)                       # on: ForceRestart
    driver.power_off(access, graceful=True)
    until(lambda: not model.is_on("node01"))
    model.set_power("node01", True)
    driver.power_off(access, graceful=False)
    until(lambda: not model.is_on("node01"))
    driver.power_cycle(access)                       # off: On
    until(lambda: model.is_on("node01"))
    model.set_power("node01", False)
    driver.power_on(access)
    driver.set_pxe_boot(access)
    drives = driver.erasable_drives(access)
    assert drives, "the site's BMC offers Drive.SecureErase"
    handle = next(iter(drives.values()))
    task = driver.secure_erase(access, handle)
    driver.erase_status(access, task)
    assert driver.find_erase(access, handle) == task     # the drive names its task
    until(lambda: driver.erase_status(access, task).state != "running")
    assert driver.find_erase(access, handle) == task     # the TaskService's tasks do
