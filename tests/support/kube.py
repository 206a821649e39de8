"""A real control plane for a test session (sitesim.kube): built binaries required under
`make test` (BERTH_KUBE_REQUIRED=1), a skip elsewhere when they are not built yet."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from sitesim.kube.binaries import KubeBinariesMissing, kube_binaries
from sitesim.kube.controlplane import ControlPlane


def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """Body of a session fixture: one control plane, stopped (by PID) when the session ends."""
    try:
        binaries = kube_binaries(build=False)
    except KubeBinariesMissing as exc:
        if os.environ.get("BERTH_KUBE_REQUIRED") == "1":
            pytest.fail(f"BERTH_KUBE_REQUIRED=1 but {exc}")
        pytest.skip(f"{exc} (run `make kube`; BERTH_KUBE_REQUIRED=1 makes this a failure)")
    with ControlPlane(tmp_path_factory.mktemp("kube"), binaries) as plane:
        yield plane
