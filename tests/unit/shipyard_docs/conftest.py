"""Fixtures: a document store on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from shipyard_api.documents.store import DocumentStore
from tests.unit.shipyard_docs.support import make_store


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/shipyard.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(db_url: str) -> DocumentStore:
    return make_store(db_url)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> DocumentStore:
    return make_store(f"sqlite:///{tmp_path}/shipyard.db")
