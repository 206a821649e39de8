"""Is a Redfish BMC fit to enroll? Reach it, then hold it to Drydock's interoperability
profile (etc/redfish/drydock-profile.json) with DMTF's validator; one verdict per requirement.

    OobError (drivers.ports)
    └── BmcCheckError      the check could not be made (the CLI exits 2)
        └── BmcUnreachable no answer at the address
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import requests
from urllib3.exceptions import InsecureRequestWarning

from common.jsontypes import JSON, JSONObject, as_list, as_object, member
from drydock_api.drivers.ports import BmcAccess, OobError
from drydock_api.drivers.redfish import interop
from drydock_api.drivers.redfish.interop import Finding

PROFILE_ENV = "DRYDOCK_BMC_PROFILE"
SOURCE_PROFILE = Path(__file__).resolve().parents[3] / "etc" / "redfish" / "drydock-profile.json"
RANK = {"FAIL": 3, "WARN": 2, "PASS": 1, "SKIP": 0}
MEMBER_LIMIT = 32  # Systems members tried when no system is named


class BmcCheckError(OobError):
    reason, title = "BmcCheckError", "BMC could not be checked"


class BmcUnreachable(BmcCheckError):
    reason, title = "BmcUnreachable", "BMC unreachable"


@dataclass(frozen=True)
class Requirement:
    """The verdict on one requirement of the profile: its worst result over every resource
    it applies to, the validator's words, and the resources that got that result."""

    resource: str
    requirement: str
    result: str
    message: str
    uris: tuple[str, ...] = ()
    purpose: str = ""  # why Drydock needs it, as the profile says

    @property
    def name(self) -> str:
        return f"{self.resource} {self.requirement}".strip() or "(service)"


@dataclass(frozen=True)
class CheckReport:
    address: str
    profile: str
    systems: tuple[str, ...]
    requirements: tuple[Requirement, ...]

    @property
    def failed(self) -> tuple[Requirement, ...]:
        return tuple(r for r in self.requirements if r.result == "FAIL")

    @property
    def passed(self) -> bool:
        return not self.failed

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("PASS", "WARN", "FAIL", "SKIP"), 0)
        for req in self.requirements:
            out[req.result] = out.get(req.result, 0) + 1
        return out


def default_profile() -> Path:
    """$DRYDOCK_BMC_PROFILE, else the profile of this source tree."""
    named = os.environ.get(PROFILE_ENV)
    path = Path(named) if named else SOURCE_PROFILE
    if not path.is_file():
        raise BmcCheckError(f"No Redfish profile at {path}: name one with --profile "
                            f"or {PROFILE_ENV}")
    return path


def normalize(address: str) -> str:
    """A BMC address as the validator wants it: with a scheme (https when none is given)."""
    address = address.strip().rstrip("/")
    if "://" not in address:
        address = f"https://{address}"
    return address.removesuffix("/redfish/v1")


class _Bmc:
    """The few GETs made before the validator runs, to fail clearly and early."""

    def __init__(self, address: str, username: str, password: str, timeout: float) -> None:
        self.address, self.timeout = address, timeout
        self.session = requests.Session()
        self.session.auth = (username, password)
        self.session.verify = False  # as Drydock's driver: BMCs mostly self-sign

    def get(self, uri: str) -> requests.Response:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InsecureRequestWarning)
                return self.session.get(self.address + uri, timeout=self.timeout)
        except requests.Timeout as exc:
            raise BmcUnreachable(f"BMC {self.address} unreachable: no answer to GET {uri} "
                                 f"within {self.timeout:g} s", transient=True) from exc
        except requests.ConnectionError as exc:
            raise BmcUnreachable(f"BMC {self.address} unreachable: {_why(exc)}",
                                 transient=True) from exc
        except requests.RequestException as exc:
            raise BmcCheckError(f"BMC {self.address}: {exc}") from exc

    def json(self, uri: str, what: str) -> JSONObject:
        resp = self.get(uri)
        if resp.status_code in (401, 403):
            raise BmcCheckError(f"BMC {self.address} refused the credentials "
                                f"({resp.status_code} on {uri})")
        try:
            body: JSON = resp.json() if resp.status_code == 200 else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise BmcCheckError(f"BMC {self.address} did not answer {what} at {uri} "
                                f"(HTTP {resp.status_code})")
        return body


def _why(exc: requests.ConnectionError) -> str:
    """The operating system's words for a failed connection ("[Errno 111] Connection
    refused"), without the layers of urllib3 around them."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return str(reason or exc).rsplit("): ", 1)[-1].rsplit(": ", 1)[-1].strip() or str(exc)


def find_systems(bmc: _Bmc, system: str | None) -> list[str]:
    """The System URIs to check: the one named (an Id or a path), else every member of the
    Systems collection these credentials can read."""
    root = bmc.json("/redfish/v1/", "as a Redfish service root")
    systems = member(root, "Systems", "@odata.id")
    if not isinstance(systems, str):
        raise BmcCheckError(f"BMC {bmc.address} lists no Systems collection in its "
                            "service root")
    systems = systems.rstrip("/")
    if system:
        uri = system.rstrip("/") if system.startswith("/") else f"{systems}/{system}"
        bmc.json(uri, "the System")
        return [uri]
    members = [m.get("@odata.id") for m in as_list(bmc.json(systems, "its Systems").get("Members"))
               if isinstance(m, dict)]
    readable, refused = [], 0
    for uri in [m.rstrip("/") for m in members if isinstance(m, str)][:MEMBER_LIMIT]:
        code = bmc.get(uri).status_code
        refused += code in (401, 403)
        if code == 200:
            readable.append(uri)
    if refused and not readable:
        raise BmcCheckError(f"BMC {bmc.address} refused the credentials for every System")
    return readable


def purpose(profile: JSONObject, resource: str, requirement: str) -> str:
    """The profile's Purpose of a requirement the validator names (`/Boot/X`, `/Actions/#T.A`,
    "" for the resource), from its first use case that states one."""
    entry = as_object(member(profile, "Resources", resource))
    parts = [p for p in requirement.removesuffix(" (Write)").split("/")
             if p and not p.isdigit()]  # array members: the array's requirement
    for case in as_list(entry.get("UseCases")) or [entry]:
        req: JSON = case
        if len(parts) == 2 and parts[0] == "Actions" and parts[1].startswith("#"):
            req = member(case, "ActionRequirements", parts[1].rsplit(".", 1)[-1])
        elif parts:
            for part in parts:
                req = member(req, "PropertyRequirements", part)
        if isinstance(req, dict) and req.get("Purpose"):
            return str(req["Purpose"])
    return ""


def summarize(findings: Iterable[Finding], profile: JSONObject | None = None
              ) -> tuple[Requirement, ...]:
    """One row per requirement (resource type and path), with its worst result."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.resource, finding.requirement), []).append(finding)
    rows = []
    for (resource, requirement), items in groups.items():
        worst = max(items, key=lambda f: RANK.get(f.result, 0)).result
        chosen = [f for f in items if f.result == worst]
        messages = list(dict.fromkeys(f.message for f in chosen))
        uris = tuple(dict.fromkeys(f.uri for f in chosen if f.uri))
        rows.append(Requirement(resource, requirement, worst, "; ".join(messages), uris,
                                purpose(profile or {}, resource, requirement)))
    rows.sort(key=lambda r: (-RANK.get(r.result, 0), r.resource, r.requirement))
    return tuple(rows)


def check_bmc(address: str, username: str, password: str, *, profile: Path | None = None,
              system: str | None = None, timeout: float = 30.0,
              report_dir: Path | None = None) -> CheckReport:
    """Check one BMC; raises BmcCheckError when it cannot be checked at all."""
    path = profile or default_profile()
    if not path.is_file():
        raise BmcCheckError(f"No Redfish profile at {path}")
    address = normalize(address)
    systems = find_systems(_Bmc(address, username, password, timeout), system)
    try:
        findings = interop.run(address, username, password, path, systems,
                               timeout=timeout, report_dir=report_dir)
    except ValueError as exc:
        raise BmcCheckError(str(exc)) from exc
    except PermissionError as exc:
        raise BmcCheckError(f"BMC {address}: {exc}") from exc
    except (OSError, requests.RequestException) as exc:
        raise BmcUnreachable(f"BMC {address} stopped answering during the check: {exc}",
                             transient=True) from exc
    try:
        stated = json.loads(path.read_text())
    except ValueError:
        stated = {}
    return CheckReport(address, str(path), tuple(systems), summarize(findings, stated))


def against_profile(bmc: BmcAccess, timeout: float = 30.0) -> list[str]:
    """A design's Redfish BMC against the profile, as Drydock's driver reaches it (http,
    https on port 443): each failed requirement and why ([] when it passes)."""
    scheme = "https" if bmc.port == 443 else "http"
    report = check_bmc(f"{scheme}://{bmc.address}:{bmc.port}", bmc.account, bmc.credential,
                       system=bmc.system_id, timeout=timeout)
    return [f"{r.name} ({r.message})" if r.message else r.name for r in report.failed]
