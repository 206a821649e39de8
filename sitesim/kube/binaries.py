"""Where the site's Kubernetes binaries are: the cache sitesim/kube/build.sh fills."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).resolve().parent / "build.sh"
NOT_BUILT = 3


class KubeBinariesMissing(Exception):
    """The binaries are not in the cache (and were not to be built), or the build failed."""


@dataclass(frozen=True)
class KubeBinaries:
    """The six binaries of one cache key, and kwok's default Stages beside them."""

    bin_dir: Path

    @property
    def stages_dir(self) -> Path:
        return self.bin_dir.parent / "stages"

    @property
    def kube_apiserver(self) -> Path:
        return self.bin_dir / "kube-apiserver"

    @property
    def kube_controller_manager(self) -> Path:
        return self.bin_dir / "kube-controller-manager"

    @property
    def kube_scheduler(self) -> Path:
        return self.bin_dir / "kube-scheduler"

    @property
    def kubectl(self) -> Path:
        return self.bin_dir / "kubectl"

    @property
    def etcd(self) -> Path:
        return self.bin_dir / "etcd"

    @property
    def kwok(self) -> Path:
        return self.bin_dir / "kwok"


def kube_binaries(build: bool = False, timeout: float = 7200.0) -> KubeBinaries:
    """The cached binaries for this module's go.mod, go.sum and Go; built first when `build`
    (progress lines go to stderr), else KubeBinariesMissing when the cache is cold."""
    args = [str(BUILD_SCRIPT)] if build else [str(BUILD_SCRIPT), "--check"]
    try:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=None if build else
                              subprocess.PIPE, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeBinariesMissing(f"{BUILD_SCRIPT} did not run: {exc}") from exc
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        detail = (done.stderr or "").strip() if not build else f"exit {done.returncode}"
        raise KubeBinariesMissing(f"Kubernetes binaries not available: {detail}")
    return KubeBinaries(Path(lines[-1]))
