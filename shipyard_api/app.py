"""Shipyard's WSGI app: `create_app(conf, deps)` for tests, `get_app()` for gunicorn."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from common.app import HealthCheck, ServiceApp, create_service_app, service_spec, wsgi_entry
from common.health import callable_check, peer_check
from common.httpclient import peer_client
from common.longpoll import ChangeWaiters, notify_on_commit
from common.pgwake import Listener, notify
from shipyard_api import config, policy
from shipyard_api.actions.ports import ActionSettings, Services
from shipyard_api.actions.service import ActionService
from shipyard_api.actions.statuses import SiteStatuses
from shipyard_api.catalog import definitions
from shipyard_api.clients.drydock import DrydockClient
from shipyard_api.clients.promenade import PromenadeClient
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.documents.deps import DocumentDeps, build_document_deps
from shipyard_api.metrics import ShipyardMetrics
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from shipyard_api.resources.actions import action_routes, site_status_routes
from shipyard_api.resources.documents import document_routes
from shipyard_api.resources.plans import plan_routes
from shipyard_api.resources.ui import cookie_auth, ui_routes
from shipyard_api.ui.actions import ActionPages
from shipyard_api.ui.site import SiteView
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.store import CHANGES_CHANNEL, ActionStore
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


@dataclass
class Deps:
    """Shipyard's collaborators, built from config by `build_deps` or given by tests."""

    health_checks: list[HealthCheck] = field(default_factory=list)
    dependency_checks: list[HealthCheck] = field(default_factory=list)
    runtime: Runtime | None = None
    actions: ActionService | None = None
    plans: PlanService | None = None
    site_statuses: SiteStatuses | None = None
    site_view: SiteView | None = None  # the web view's site page
    waiters: ChangeWaiters | None = None  # long-polls of GET /actions/{id}
    metrics: ShipyardMetrics = field(default_factory=ShipyardMetrics)


def migrate(url: str, attempts: int = 5) -> None:
    """Apply migrations; several processes starting at once serialise (PostgreSQL advisory
    lock) or retry until one of them has brought the schema to head."""
    for attempt in range(attempts):
        try:
            if url.startswith("postgresql"):
                engine = make_engine(url)
                try:
                    with engine.connect() as conn:
                        conn.execute(text("SELECT pg_advisory_lock(8271)"))
                        try:
                            upgrade(url)
                        finally:
                            conn.execute(text("SELECT pg_advisory_unlock(8271)"))
                finally:
                    engine.dispose()
            else:
                upgrade(url)
            return
        except Exception:
            if attempt + 1 == attempts:
                raise
            time.sleep(0.2 * (attempt + 1))


def build_runtime(conf: cfg.ConfigOpts, worker_count: int,
                  metrics: ShipyardMetrics | None = None) -> Runtime:
    """Migrate the database, then build the store, the services and the engine workers."""
    url = conf.database.connection or DEFAULT_DB
    migrate(url)
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
                                long_poll_wait=wf.long_poll_wait))
    store = ActionStore(sessions)
    services.plans = PlanStore(sessions)
    settings = EngineSettings(lease_seconds=wf.lease_seconds, hold_seconds=wf.hold_seconds,
                              max_concurrent_nodes=wf.max_concurrent_nodes,
                              max_poll_interval=wf.max_poll_interval or None)
    prefix = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    defs = definitions()

    def make(n: int) -> Engine:
        return Engine(store, defs, services, owner=f"{prefix}:{n}", settings=settings,
                      observe=metrics.observe_step if metrics else None)

    pool = WorkerPool(make, worker_count, wf.poll_interval)
    pool.listener = Listener(engine, {ACTIONS_CHANNEL: pool.wake})

    def wake() -> None:
        pool.wake()
        notify(engine, ACTIONS_CHANNEL)

    return Runtime(sessions, docs, store, services, pool, wake)


def build_deps(conf: cfg.ConfigOpts) -> Deps:
    metrics = ShipyardMetrics()
    runtime = build_runtime(conf, conf.workflow.api_workers, metrics)
    metrics.watch(runtime.store)
    actions = ActionService(runtime.store, definitions(), runtime.documents.store,
                            wake=runtime.wake, services=runtime.services)
    plans = PlanService(PlanStore(runtime.sessions), actions, ttl=conf.workflow.plan_ttl)
    actions.plans = plans

    def database() -> str:
        with runtime.sessions() as s:
            s.execute(text("SELECT 1"))
        return "database reachable"

    checks = [callable_check("database", database)]
    peers = [peer_check("promenade", peer_client(conf, "promenade")),
             peer_check("drydock", peer_client(conf, "drydock"))]
    statuses = SiteStatuses(runtime.services.drydock, runtime.documents.store,
                            runtime.documents.public_url)
    site = SiteView(runtime.services.drydock, runtime.services.promenade,
                    runtime.documents.store, runtime.documents.public_url)
    waiters = action_waiters(conf, runtime)
    runtime.workers.start()
    return Deps(health_checks=checks, dependency_checks=peers, runtime=runtime, actions=actions,
                plans=plans, site_statuses=statuses, site_view=site, metrics=metrics,
                waiters=waiters)


def action_waiters(conf: cfg.ConfigOpts, runtime: Runtime) -> ChangeWaiters:
    """Long-polls of actions wake on this process's commits and, with PostgreSQL, on the
    changes other processes (shipyard-workers) announce: the API process listens to those
    too, whether or not it runs engine threads."""
    waiters = ChangeWaiters(max_waiters=conf.api.long_poll_waiters,
                            recheck=conf.api.long_poll_recheck)
    engine = runtime.sessions.kw["bind"]
    notify_on_commit(engine, waiters)
    runtime.workers.listener = Listener(engine, {ACTIONS_CHANNEL: runtime.workers.wake,
                                                 CHANGES_CHANNEL: waiters.notify})
    return waiters


def create_app(conf: cfg.ConfigOpts, deps: Deps | None = None) -> ServiceApp:
    deps = deps or build_deps(conf)
    routes: list[tuple[str, object]] = []
    if deps.runtime is not None:
        routes += document_routes(deps.runtime.documents.store, deps.runtime.documents.validator)
    if deps.actions is not None:
        routes += action_routes(deps.actions, conf.workflow.max_target_nodes, deps.waiters,
                                conf.api.long_poll_max_wait)
    if deps.plans is not None:
        routes += plan_routes(deps.plans, conf.workflow.max_target_nodes)
    if deps.site_statuses is not None:
        routes += site_status_routes(deps.site_statuses)
    if deps.actions is not None and deps.site_view is not None:
        routes += ui_routes(ActionPages(deps.actions, deps.site_view.drydock), deps.site_view,
                            deps.plans)
    return create_service_app(
        service_spec(conf, config.SERVICE, routes, policy.list_rules(), deps.health_checks,
                     deps.dependency_checks, deps.metrics.registry))


def get_app() -> Any:
    conf = config.load()
    return cookie_auth(wsgi_entry(conf, create_app(conf)))
