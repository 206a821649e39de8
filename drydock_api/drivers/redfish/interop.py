"""DMTF's redfish-interop-validator run in-process on the resources Drydock's driver walks;
the one module that knows the validator's modules and the shape of its results."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from common.errors import ServiceUnavailable
from common.jsontypes import JSON, JSONObject, as_object

if TYPE_CHECKING:  # an optional dependency (berth[bmc]), imported when a check runs
    from redfish_interop_validator.system_under_test import SystemUnderTest

TASK_LIMIT = 20  # tasks of the TaskService validated (a BMC may keep hundreds)
_PROFILE_NOTE = re.compile(r";\s*Profile: [^\n]*?, Use Case: [^\n;]*")
_ALL_OF = "does not contain all of the required values: "
_LOCK = threading.Lock()  # the validator keeps its profiles and logger in module globals


class ValidatorMissing(ServiceUnavailable):
    reason, title = "ValidatorMissing", "redfish-interop-validator is not installed"
    retry = False


@dataclass(frozen=True)
class Finding:
    """One result of the validator: a requirement of `resource` (a property or action path,
    "" for the resource itself) at `uri` (None: across the service)."""

    resource: str
    requirement: str
    result: str  # PASS, WARN, FAIL or SKIP
    message: str
    uri: str | None = None


def _modules(*extra: str) -> dict[str, ModuleType]:
    names = ("profile", "system_under_test", "logger", *extra)  # report: openpyxl, slow
    try:
        return {n: importlib.import_module(f"redfish_interop_validator.{n}") for n in names}
    except ImportError as exc:
        raise ValidatorMissing(
            "The BMC check needs DMTF's redfish-interop-validator: "
            "pip install 'berth[bmc]' (or redfish-interop-validator)") from exc


def validator_version() -> str:
    try:
        module = importlib.import_module("redfish_interop_validator.console_scripts")
    except ImportError:
        return "unknown"
    return str(getattr(module, "tool_version", "unknown"))


@contextlib.contextmanager
def _quiet(mods: dict[str, ModuleType], log_file: Path | None) -> Iterator[None]:
    """The validator prints as it goes and logs through a module global: both go to
    `log_file` (or nowhere) for the length of one run."""
    log = logging.getLogger("drydock.bmccheck.validator")
    log.propagate = False
    log.setLevel(logging.INFO)
    handler: logging.Handler = (logging.FileHandler(log_file) if log_file
                                else logging.NullHandler())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    module = mods["logger"]  # the validator's logger lives in this module's global
    saved = module.logger
    vars(module)["logger"] = log
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        vars(module)["logger"] = saved
        log.removeHandler(handler)
        handler.close()


def _link(payload: JSONObject, name: str) -> str | None:
    ref = payload.get(name)
    uri = ref.get("@odata.id") if isinstance(ref, dict) else None
    return uri.rstrip("/") if isinstance(uri, str) and uri.startswith("/") else None


def _members(payload: JSONObject, key: str = "Members") -> list[str]:
    refs = payload.get(key)
    return [str(r["@odata.id"]).rstrip("/") for r in (refs if isinstance(refs, list) else [])
            if isinstance(r, dict) and isinstance(r.get("@odata.id"), str)]


def _walk(sut: SystemUnderTest, systems: list[str]) -> None:
    """Validate each resource Drydock's driver reads, and only those: the root, the
    Systems collection, each System, its storage and drives, the TaskService and tasks."""
    def visit(uri: str) -> JSONObject:
        sut.validate("Single", uri, uri)
        data: JSON = sut.get_resource_data(uri)
        return as_object(data)

    root = visit("/redfish/v1/")
    collection = _link(root, "Systems")
    if collection:
        visit(collection)
    for system in systems:
        storage = _link(visit(system), "Storage")
        if not storage:
            continue
        for member in _members(visit(storage)):
            for drive in _members(visit(member), "Drives"):
                visit(drive)
    service = _link(root, "TaskService")
    tasks = _link(visit(service), "Tasks") if service else None
    if tasks:
        for task in _members(visit(tasks))[:TASK_LIMIT]:
            visit(task)


def _missing_values(sut: SystemUnderTest, uri: str, prop: str, message: str) -> str:
    """For an AllOf comparison that failed: which of the required values are missing."""
    if _ALL_OF not in message:
        return message
    try:
        wanted = json.loads("[" + message.split(_ALL_OF, 1)[1].split(";")[0] + "]")
    except ValueError:
        return message
    value: JSON = sut.get_resource_data(uri)
    for part in prop.strip("/").split("/"):
        value = value.get(part) if isinstance(value, dict) else None
    have = value if isinstance(value, list) else [value]
    missing = [w for w in wanted if w not in have]
    return f"{message} (missing: {', '.join(map(str, missing))})" if missing else message


def _findings(sut: SystemUnderTest) -> list[Finding]:
    out: list[Finding] = []
    for uri, resource in sut._resources.items():
        rtype = sut.get_resource_type(uri)[0] or ""
        for prop, result in resource["Results"].items():
            message = _PROFILE_NOTE.sub("", str(result["Message"])).strip()
            name = result["Result"].name
            if name == "FAIL":
                message = _missing_values(sut, uri, prop.removesuffix(" (Write)"), message)
            out.append(Finding(rtype, prop, name, message, uri))
    for rtype, result in sut._service_resource_results["Results"].items():
        out.append(Finding(rtype, "", result["Result"].name,
                           _PROFILE_NOTE.sub("", str(result["Message"])).strip()))
    return out


def _connect(mods: dict[str, ModuleType], rhost: str, username: str, password: str,
             timeout: float) -> SystemUnderTest:
    """The validator's session to the BMC; its client's failures as OSErrors
    (PermissionError: the credentials were refused)."""
    rest = importlib.import_module("redfish.rest.v1")
    try:
        sut: SystemUnderTest = mods["system_under_test"].SystemUnderTest(
            rhost, username, password, max(1, int(timeout)), "Basic", None, None, None,
            ["LogEntry", "20"], True)
        return sut
    except rest.InvalidCredentialsError as exc:
        raise PermissionError(f"the BMC refused the credentials: {exc}") from exc
    except (rest.ServerDownOrUnreachableError, rest.RetriesExhaustedError) as exc:
        raise ConnectionError(f"the BMC did not answer: {exc}") from exc


def run(rhost: str, username: str, password: str, profile: Path, systems: list[str], *,
        timeout: float, report_dir: Path | None = None) -> list[Finding]:
    """Validate the BMC at `rhost` against `profile`, walking `systems` (their URIs).
    Raises ValueError for a profile that is not a valid interoperability profile."""
    mods = _modules(*(("report",) if report_dir else ()))
    with _LOCK:
        if report_dir:
            report_dir.mkdir(parents=True, exist_ok=True)
        log_file = report_dir / "validator.log" if report_dir else None
        with _quiet(mods, log_file):
            mods["profile"]._parsed_profiles.clear()
            try:
                mods["profile"].load_profile(str(profile.parent), profile.name)
            except (OSError, ValueError) as exc:
                raise ValueError(f"{profile} is not a valid Redfish interoperability profile "
                                 f"(see the validator's log): {exc}") from exc
            sut = _connect(mods, rhost, username, password, timeout)
            try:
                _walk(sut, systems)
                sut.apply_global_checks()
                if report_dir:
                    args = {"rhost": rhost, "user": username, "profile": str(profile),
                            "authtype": "Basic"}
                    mods["report"].html_report(sut, report_dir, datetime.now(),
                                               validator_version(), args,
                                               mods["profile"].get_profile_name())
            finally:
                sut.logout()
            return _findings(sut)
