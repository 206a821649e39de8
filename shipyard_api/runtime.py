"""Wires Shipyard from config: database, document store, peers' clients, engine workers
(shared by the API process and `shipyard-worker`, which never imports the web app)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from common.clients.drydock import DrydockClient
from common.clients.promenade import PromenadeClient
from common.httpclient import peer_client
from common.pgwake import Listener, notify
from shipyard_api.actions.budget import SlotRenewer
from shipyard_api.actions.ports import ActionSettings, Services
from shipyard_api.catalog import definitions
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.documents.deps import DocumentDeps, build_document_deps
from shipyard_api.metrics import ShipyardMetrics
from shipyard_api.plans.store import PlanStore
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.store import ActionStore
from shipyard_api.workflow.worker import WorkerPool

DEFAULT_DB = "sqlite:///shipyard.db"


ACTIONS_CHANNEL = "berth_shipyard_actions"  # PostgreSQL: an action is due now


@dataclass
class Runtime:
    """The database-backed parts shared by the API and shipyard-worker processes."""

    sessions: sessionmaker[Session]
    documents: DocumentDeps
    store: ActionStore
    services: Services
    workers: WorkerPool
    wake: Callable[[], None]  # an action can run now: this process's and others' workers


def build_runtime(conf: cfg.ConfigOpts, worker_count: int,
                  metrics: ShipyardMetrics | None = None) -> Runtime:
    """Migrate the database, then build the store, the services and the engine workers."""
    url = conf.database.connection or DEFAULT_DB
    upgrade(url)
    engine = make_engine(url)
    sessions = session_factory(engine)
    docs = build_document_deps(conf, sessions)
    wf = conf.workflow
    services = Services(
        promenade=PromenadeClient(peer_client(conf, "promenade")),
        drydock=DrydockClient(peer_client(conf, "drydock")),
        documents=docs.store,
        settings=ActionSettings(public_url=docs.public_url, step_retries=wf.step_retries,
                                step_backoff=wf.step_backoff, max_backoff=wf.max_backoff,
                                outage_window=wf.peer_outage_window,
                                long_poll_wait=wf.long_poll_wait,
                                budget_lease=wf.budget_lease_seconds))
    store = ActionStore(sessions)
    services.plans = PlanStore(sessions)
    settings = EngineSettings(lease_seconds=wf.lease_seconds, hold_seconds=wf.hold_seconds,
                              max_concurrent_nodes=wf.max_concurrent_nodes,
                              max_poll_interval=wf.max_poll_interval or None,
                              attempt_timeout=wf.attempt_timeout or None)
    prefix = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    defs = definitions()

    def make(n: int) -> Engine:
        return Engine(store, defs, services, owner=f"{prefix}:{n}", settings=settings,
                      observe=metrics.observe_step if metrics else None,
                      on_stuck=metrics.count_stuck if metrics else None)

    pool = WorkerPool(make, worker_count, wf.poll_interval)
    pool.listener = Listener(engine, {ACTIONS_CHANNEL: pool.wake})
    pool.companions.append(SlotRenewer(store, services).run)

    def wake() -> None:
        pool.wake()
        notify(engine, ACTIONS_CHANNEL)

    return Runtime(sessions, docs, store, services, pool, wake)
