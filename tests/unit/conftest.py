"""Unit tests start from migrated copies of each service's database (tests/support/migrated.py),
except the tests of the migrations themselves (tests/unit/common)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from common import migrate
from tests.support.migrated import MigratedCopies


@pytest.fixture(scope="session")
def migrated_copies(tmp_path_factory: pytest.TempPathFactory) -> MigratedCopies:
    return MigratedCopies(tmp_path_factory.mktemp("migrated"))


@pytest.fixture(autouse=True)
def _start_from_migrated_copies(request: pytest.FixtureRequest, migrated_copies: MigratedCopies,
                                monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if "common" not in request.node.path.parent.name:
        monkeypatch.setattr(migrate, "upgrade", migrated_copies.upgrade)
    yield
