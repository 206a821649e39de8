"""Build Berth's image the way `make image` does, and run its services as podman containers
with the manifests' security settings (read-only root, uid 10001, no capabilities)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/berth:latest"
UID = 10001


def podman_problem() -> str | None:
    """Why podman cannot be had here (None: it is installed, or image/build.sh installs it)."""
    if shutil.which("podman") is not None:
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "podman is not installed and cannot be installed here (needs root and apt-get)"
    return None


def build_image(image: str = IMAGE, timeout: float = 3600) -> str:
    """Run image/build.sh (what `make image` runs); its output."""
    done = subprocess.run([str(ROOT / "image" / "build.sh")], cwd=ROOT,
                          env={**os.environ, "IMAGE": image}, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def ulimits() -> list[str]:
    """Explicit limits no higher than the host's hard limits (podman's defaults can be
    higher, which runc then fails to set)."""
    def hard(kind: int, wanted: int) -> int:
        limit = resource.getrlimit(kind)[1]
        return wanted if limit == resource.RLIM_INFINITY else min(limit, wanted)

    nofile, nproc = hard(resource.RLIMIT_NOFILE, 65536), hard(resource.RLIMIT_NPROC, 8192)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


class Container:
    """One detached container on the host network; `stop()` removes it (and only it)."""

    def __init__(self, name: str, argv: Sequence[str], mounts: Sequence[Path],
                 image: str = IMAGE) -> None:
        self.name = name
        volumes = [arg for path in mounts for arg in ("--volume", f"{path}:{path}")]
        self.id = subprocess.run([
            "podman", "run", "--detach", "--name", name, "--runtime", "runc",
            "--network", "host", "--read-only", "--read-only-tmpfs=false", "--tmpfs", "/tmp",
            "--user", f"{UID}:{UID}", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", *ulimits(), *volumes, image, *argv],
            check=True, capture_output=True, text=True, timeout=120).stdout.strip()

    def running(self) -> bool:
        out = subprocess.run(["podman", "inspect", "--format", "{{.State.Running}}", self.id],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() == "true"

    def logs(self) -> str:
        out = subprocess.run(["podman", "logs", self.id], capture_output=True, text=True,
                             timeout=60)
        return out.stdout + out.stderr

    def exec(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["podman", "exec", self.id, *argv], capture_output=True,
                              text=True, timeout=60)

    def inspect(self, template: str) -> str:
        return subprocess.run(["podman", "inspect", "--format", template, self.id],
                              capture_output=True, text=True, timeout=60).stdout.strip()

    def wait_answering(self, url: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise AssertionError(f"{self.name} exited:\n{self.logs()[-4000:]}")
            try:
                if requests.get(url, timeout=1).status_code in (200, 204):
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.name} did not answer {url}:\n{self.logs()[-4000:]}")

    def stop(self) -> None:
        subprocess.run(["podman", "rm", "--force", "--time", "10", self.id],
                       capture_output=True, timeout=120)
