"""The kubectl built beside the site's control plane, run against a real control plane of its
own (module scope), through a runner that keeps the exit code."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sitesim.kube.controlplane import ControlPlane
from tests.support import kube as kube_support
from tests.support.kube import Admin


@dataclass
class Kubectl:
    """The built kubectl with a kubeconfig (the admin's unless told) and its own cache."""

    plane: ControlPlane
    cache: Path

    def argv(self, *args: str, kubeconfig: Path | None = None) -> list[str]:
        config = kubeconfig or self.plane.kubeconfig
        return [str(self.plane.binaries.kubectl), f"--kubeconfig={config}", *args]

    def env(self) -> dict[str, str]:
        env = dict(os.environ, KUBECACHEDIR=str(self.cache))
        env.pop("KUBECONFIG", None)
        return env

    def run(self, *args: str, stdin: str | None = None, kubeconfig: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args, kubeconfig=kubeconfig), input=stdin,
                              env=self.env(), capture_output=True, text=True, timeout=timeout,
                              check=False)

    def start(self, *args: str, out: Path, err: Path) -> subprocess.Popen[bytes]:
        """A command left running, its stdout and stderr written to files as they come."""
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            return subprocess.Popen(self.argv(*args), env=self.env(), stdout=stdout,
                                    stderr=stderr, stdin=subprocess.DEVNULL)

    def ok(self, *args: str, stdin: str | None = None, kubeconfig: Path | None = None,
           timeout: float = 120) -> str:
        """stdout of a command that must succeed."""
        done = self.run(*args, stdin=stdin, kubeconfig=kubeconfig, timeout=timeout)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))


def is_ready(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in obj.get("status", {}).get("conditions", []))


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane for one test module, stopped (by PID) after it."""
    yield from kube_support.control_plane(tmp_path_factory)


@pytest.fixture(scope="module")
def admin(plane: ControlPlane) -> Admin:
    return Admin(plane)


@pytest.fixture(scope="module")
def kubectl(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(plane, tmp_path_factory.mktemp("kubectl-cache"))


def create_nodes(admin: Admin, *names: str, **labels: str) -> list[dict[str, Any]]:
    """kwok Nodes (tests.support.kube), once the API shows them Ready."""
    return [admin.ready_node(name, **labels) for name in names]
