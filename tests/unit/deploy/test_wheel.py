"""The wheel the Dockerfile builds holds every file the services need and nothing of the
simulator or the launcher, and an installed copy of it (run away from the source tree) migrates
both databases and serves its OpenAPI documents."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.unit.deploy.objects import ROOT

PACKAGES = ("common", "shipyard_api", "promenade_api", "drydock_api", "schemas")


def build_stage_copies() -> list[str]:
    """What the Dockerfile's build stage COPYs from the source tree."""
    stage = (ROOT / "Dockerfile").read_text().split("\nFROM ")[1]
    return [word for line in stage.splitlines() if line.startswith("COPY ")
            for word in line.split()[1:-1]]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built as the Dockerfile builds it, from a copy of its build context."""
    context, out = tmp_path_factory.mktemp("context"), tmp_path_factory.mktemp("wheel")
    copies = build_stage_copies()
    assert "pyproject.toml" in copies and "drydock_api" in copies
    for name in copies:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, context / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, context / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(context)],
                   check=True, capture_output=True, cwd=context)
    (built,) = out.glob("berth-*.whl")
    return built


def tracked_package_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", *PACKAGES], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    return set(listed)


def head_of(service: str) -> str:
    versions = ROOT / f"{service}_api" / "db" / "migrations" / "versions"
    revisions = sorted(p.stem for p in versions.glob("0*.py"))
    text = (versions / f"{revisions[-1]}.py").read_text()
    return text.split('revision = "', 1)[1].split('"', 1)[0]


def test_the_wheel_holds_every_tracked_file_of_the_packages(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        inside = {name for name in archive.namelist() if not name.startswith("berth-")}
    missing = sorted(tracked_package_files() - inside)
    assert missing == []


def test_the_wheel_holds_no_simulator_and_no_launcher(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    assert not [n for n in names if n.startswith(("sitesim/", "berth_launcher/"))]
    assert "shipyard-api = " in scripts and "drydock-db = " in scripts
    assert "sitesim" not in scripts and "berth_launcher" not in scripts


def test_an_installed_wheel_migrates_both_databases(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    script = textwrap.dedent(f"""
        import sqlalchemy
        import drydock_api, shipyard_api
        from drydock_api import db as drydock_db
        from shipyard_api import db as shipyard_db
        from common.app import load_openapi
        assert drydock_api.__file__.startswith({str(target)!r}), drydock_api.__file__
        for name, module in (("shipyard", shipyard_db), ("drydock", drydock_db)):
            url = "sqlite:///" + name + ".db"
            module.upgrade(url)
            engine = sqlalchemy.create_engine(url)
            with engine.connect() as conn:
                version = conn.execute(sqlalchemy.text("SELECT version_num FROM alembic_version"))
                print("db-" + name, version.scalar_one())
        for service in ("shipyard", "promenade", "drydock"):
            print("paths-" + service, len(load_openapi(service)["paths"]))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                            text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    lines = dict(line.split() for line in result.stdout.splitlines())
    heads = {name: head_of(name) for name in ("shipyard", "drydock")}
    assert {name: lines[f"db-{name}"] for name in heads} == heads
    assert all(int(lines[f"paths-{s}"]) > 5 for s in ("shipyard", "promenade", "drydock"))
