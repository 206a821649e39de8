"""A service process started by the launcher runs the launcher's own code, even when the
environment's import path points at another copy of the packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import berth_launcher
from berth_launcher.services import child_env


def test_a_child_imports_the_launchers_own_packages_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoy = tmp_path / "other-checkout"
    (decoy / "berth_launcher").mkdir(parents=True)
    (decoy / "berth_launcher" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(decoy))
    env = child_env("drydock", tmp_path / "drydock.conf")
    seen = subprocess.run(
        [sys.executable, "-c", "import berth_launcher; print(berth_launcher.__file__)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(seen) == Path(berth_launcher.__file__).resolve()
    assert env["DRYDOCK_CONFIG_FILE"] == str(tmp_path / "drydock.conf")
    assert env["PYTHONPATH"].endswith(str(decoy))  # what was there is kept, after it
