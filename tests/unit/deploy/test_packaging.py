"""`pip install berth` brings the services alone; the simulator's libraries are the `sim` extra;
the image's constraints pin exactly what the services need, at the versions tested."""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.unit.deploy.objects import ROOT

SIMULATOR_ONLY = {"flask", "sushy-tools", "werkzeug"}


def requirements(extra: str | None) -> set[str]:
    out = set()
    for line in metadata.distribution("berth").requires or []:
        req = Requirement(line)
        wanted = req.marker is None if extra is None else (
            req.marker is not None and req.marker.evaluate({"extra": extra}))
        if wanted:
            out.add(canonicalize_name(req.name))
    return out


def pins() -> dict[str, str]:
    lines = (ROOT / "image" / "constraints.txt").read_text().splitlines()
    return dict(line.split("==") for line in lines if line and not line.startswith("#"))


def test_the_services_install_without_the_simulators_libraries() -> None:
    assert requirements(None) and not requirements(None) & SIMULATOR_ONLY
    assert requirements("sim") >= SIMULATOR_ONLY


def test_constraints_pin_every_service_requirement_at_the_tested_version() -> None:
    pinned = pins()
    assert requirements(None) <= set(pinned)
    assert not set(pinned) & SIMULATOR_ONLY
    for name, version in pinned.items():
        assert metadata.version(name) == version, name
