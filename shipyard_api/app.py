"""Shipyard's WSGI app: `create_app(conf, deps)` for tests, `get_app()` for gunicorn."""

from __future__ import annotations

from dataclasses import dataclass, field
from wsgiref.types import WSGIApplication

from oslo_config import cfg
from sqlalchemy import text

from common.app import HealthCheck, ServiceApp, create_service_app, service_spec, wsgi_entry
from common.audit_api import audit_routes
from common.health import callable_check, peer_check
from common.httpclient import peer_client
from common.idempotency import SqlIdempotencyStore
from common.longpoll import ChangeWaiters, notify_on_commit
from common.pgwake import Listener
from shipyard_api import config, policy
from shipyard_api.actions.service import ActionService
from shipyard_api.actions.statuses import SiteStatuses
from shipyard_api.catalog import definitions
from shipyard_api.documents.deps import DocumentDeps
from shipyard_api.metrics import ShipyardMetrics
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from shipyard_api.resources.actions import action_routes, site_status_routes
from shipyard_api.resources.airship import airship_routes
from shipyard_api.resources.documents import document_routes
from shipyard_api.resources.plans import plan_routes
from shipyard_api.resources.ui import cookie_auth, ui_routes
from shipyard_api.runtime import ACTIONS_CHANNEL, Runtime, build_runtime
from shipyard_api.ui.actions import ActionPages
from shipyard_api.ui.site import SiteView
from shipyard_api.workflow.store import CHANGES_CHANNEL


@dataclass
class Deps:
    """Shipyard's collaborators, built from config by `build_deps` or given by tests; every
    route family needs its collaborator, so none is optional."""

    documents: DocumentDeps
    actions: ActionService
    plans: PlanService
    site_statuses: SiteStatuses
    site_view: SiteView  # the web view's site page
    health_checks: list[HealthCheck] = field(default_factory=list)
    dependency_checks: list[HealthCheck] = field(default_factory=list)
    waiters: ChangeWaiters | None = None  # long-polls of GET /actions/{id}
    metrics: ShipyardMetrics = field(default_factory=ShipyardMetrics)
    idempotency: SqlIdempotencyStore | None = None  # Idempotency-Key entries (the database)


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
    return Deps(documents=runtime.documents, actions=actions, plans=plans,
                site_statuses=statuses, site_view=site, health_checks=checks,
                dependency_checks=peers, metrics=metrics, waiters=waiters,
                idempotency=SqlIdempotencyStore.from_conf(runtime.sessions.kw["bind"], conf))


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
    max_nodes = conf.workflow.max_target_nodes
    routes = [*document_routes(deps.documents.store, deps.documents.validator),
              *action_routes(deps.actions, max_nodes, deps.waiters,
                            conf.api.long_poll_max_wait),
              *airship_routes(deps.actions),
              *plan_routes(deps.plans, max_nodes),
              *site_status_routes(deps.site_statuses),
              *audit_routes(deps.actions.store.engine, config.SERVICE),
              *ui_routes(ActionPages(deps.actions, deps.site_view.drydock, deps.waiters,
                                     conf.api.long_poll_max_wait), deps.site_view,
                         deps.plans)]
    return create_service_app(
        service_spec(conf, config.SERVICE, routes, policy.list_rules(), deps.health_checks,
                     deps.dependency_checks, deps.metrics.registry, deps.idempotency))


def get_app() -> WSGIApplication:
    conf = config.load()
    app: WSGIApplication = wsgi_entry(conf, create_app(conf))
    return cookie_auth(app)
