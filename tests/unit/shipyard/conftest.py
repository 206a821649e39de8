"""Fixtures for Shipyard's workflow tests: a migrated database, fakes, a fake clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from common.context import RequestContext
from common.crypto import FernetCipher
from shipyard_api.actions.fakes import FakeDocuments
from shipyard_api.actions.ports import ActionSettings, Services
from shipyard_api.actions.service import ActionService
from shipyard_api.actions.statuses import SiteStatuses
from shipyard_api.app import Deps
from shipyard_api.catalog import definitions
from shipyard_api.clients.fakes import FakeDrydock, FakePromenade
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.documents.deps import DocumentDeps
from shipyard_api.documents.store import DocumentStore
from shipyard_api.documents.validation import CommitValidator
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from shipyard_api.ui.site import SiteView
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.store import ActionStore
from tests.unit.shipyard.design import design


class FakeClock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the caller's thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the future carries it, like a pool
            future.set_exception(exc)
        return future


def owner_data(doc: dict[str, Any]) -> dict[str, str]:
    """A BaremetalNode's design labels, as Drydock's node view shows them."""
    return dict(((doc.get("data") or {}).get("metadata") or {}).get("owner_data") or {})


class Harness:
    """One database, fake peers and documents, a fake clock, and engines sharing them."""

    def __init__(self, url: str) -> None:
        upgrade(url)
        self.engine_db = make_engine(url)
        self.store = ActionStore(session_factory(self.engine_db))
        self.clock = FakeClock()
        self.docs = FakeDocuments()
        self.promenade = FakePromenade()
        self.drydock = FakeDrydock()
        self.settings = ActionSettings(public_url="http://shipyard", step_retries=2,
                                       step_backoff=5.0, max_backoff=60.0,
                                       outage_window=0.0)
        self.services = Services(self.promenade, self.drydock, self.docs, self.settings)
        self.api = ActionService(self.store, definitions(), self.docs, clock=self.clock,
                                 services=self.services)

    def commit(self, docs: list[dict[str, Any]] | None = None, *, tag: str | None = None) -> int:
        docs = docs or design()
        rev = self.docs.commit(docs)
        self.drydock.node_list = [  # Drydock knows the design's nodes, all deployed
            {"hostname": d["metadata"]["name"], "maas_status": "Deployed", "power_state": "on",
             "retired": False, "labels": owner_data(d)}
            for d in docs if d["schema"] == "drydock/BaremetalNode/v1"]
        if tag:
            self.docs.add_tag(rev, tag, {"dag_id": "earlier"})
        return rev

    def deps(self, **given: Any) -> Deps:
        """The app's collaborators on this harness (the fakes, its database), `given` ones
        instead of the defaults."""
        sessions = session_factory(self.engine_db)
        store = DocumentStore(sessions, cipher=FernetCipher(Fernet.generate_key()))
        defaults: dict[str, Any] = {
            "documents": DocumentDeps(store, CommitValidator(store, [],
                                                             public_url="http://shipyard")),
            "actions": self.api,
            "plans": PlanService(PlanStore(sessions), self.api, clock=self.clock),
            "site_statuses": SiteStatuses(self.drydock, self.docs, "http://shipyard"),
            "site_view": SiteView(self.drydock, self.promenade, self.docs, "http://shipyard")}
        return Deps(**{**defaults, **given})

    def engine(self, owner: str = "w1", *, lease: float = 30.0, limit: int = 4,
               hold: float = 5.0,
               executor: Callable[[int], Executor] | None = None) -> Engine:
        return Engine(self.store, definitions(), self.services, owner=owner,
                      settings=EngineSettings(lease_seconds=lease, hold_seconds=hold,
                                              max_concurrent_nodes=limit),
                      clock=self.clock, sleep=self.clock.sleep,
                      executor=executor or (lambda n: InlineExecutor()))

    def create(self, name: str, params: dict[str, Any] | None = None,
               marker: str = "6f1c3d2e-0000-4000-8000-000000000001") -> dict[str, Any]:
        return self.api.create(name, params or {}, RequestContext(marker=marker, user="admin"))

    def drive(self, action_id: str, engine: Engine | None = None, rounds: int = 500,
              until: tuple[str, ...] = ("complete", "failed", "stopped")) -> dict[str, Any]:
        """Run the engine, advancing the fake clock, until the action reaches `until`."""
        engine = engine or self.engine()
        for _ in range(rounds):
            view = self.api.get(action_id)
            if view["state"] in until:
                return view
            if not engine.run_once():
                self.clock.sleep(1.0)
        return self.api.get(action_id)

    def run_until(self, done: Callable[[], object], rounds: int = 50) -> None:
        """Run an engine a second at a time until `done()` (e.g. a peer call was made)."""
        engine = self.engine(hold=0.0)
        for _ in range(rounds):
            engine.run_once()
            self.clock.sleep(1.0)
            if done():
                return
        raise AssertionError("condition not reached")

    def step(self, action_id: str, sid: str) -> dict[str, Any]:
        return self.api.step(action_id, sid)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(f"sqlite:///{tmp_path}/shipyard.db")
    yield h
    h.engine_db.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """The same harness on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/shipyard.db"
    else:
        url = request.getfixturevalue("postgres_url")
    h = Harness(url)
    yield h
    h.engine_db.dispose()
