"""The rendered overlays, built once per module with the Python renderer."""

from __future__ import annotations

import pytest

from tests.unit.deploy.kustomize import build
from tests.unit.deploy.objects import DEPLOY, OVERLAYS, Obj


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[Obj]]:
    return request.param, build(DEPLOY / "overlays" / request.param)
