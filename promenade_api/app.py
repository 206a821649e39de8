"""Promenade's WSGI app: `create_app(conf, deps)` for tests, `get_app()` for gunicorn."""

from __future__ import annotations

from dataclasses import dataclass, field
from wsgiref.types import WSGIApplication

from oslo_config import cfg

from common.api import API_PREFIX
from common.app import HealthCheck, ServiceApp, create_service_app, service_spec, wsgi_entry
from common.idempotency import SqlIdempotencyStore
from common.longpoll import ChangeWaiters
from common.nodepaths import NodePathSink, node_paths
from promenade_api import config, policy
from promenade_api.db.runs import RunStore
from promenade_api.metrics import PromenadeMetrics
from promenade_api.resources.etcd import (
    EtcdHealthResource,
    JoinEtcdResource,
    ValidateDesignResource,
)
from promenade_api.resources.joinscripts import JoinScriptsResource
from promenade_api.resources.nodes import (
    ClearLabelsResource,
    DecommissionCancelResource,
    DecommissionPreviewResource,
    DecommissionResource,
    DrainResource,
    NodeLabelsResource,
    NodeResource,
    RemoveEtcdResource,
    RemoveFromClusterResource,
    ShutdownKubeletResource,
)
from promenade_api.runtime import build_runtime
from promenade_api.service import Promenade


@dataclass
class Deps:
    """Promenade's collaborators, built from config by `build_deps` or given by tests."""

    promenade: Promenade
    health_checks: list[HealthCheck] = field(default_factory=list)
    metrics: PromenadeMetrics = field(default_factory=PromenadeMetrics)
    idempotency: SqlIdempotencyStore | None = None  # Idempotency-Key entries (the database)
    runs: RunStore | None = None  # decommission runs (the database; in memory when None)


def build_deps(conf: cfg.ConfigOpts) -> Deps:
    metrics = PromenadeMetrics()
    runtime = build_runtime(conf, metrics)
    return Deps(promenade=runtime.promenade, health_checks=runtime.health_checks,
                metrics=metrics, idempotency=runtime.idempotency, runs=runtime.runs)


def routes(svc: Promenade, conf: cfg.ConfigOpts | None = None,
           runs: RunStore | None = None) -> list[tuple[str, object]]:
    node = f"{API_PREFIX}/nodes/{{node_id}}"
    waiters = None if conf is None else ChangeWaiters(
        max_waiters=conf.api.long_poll_waiters, recheck=conf.api.long_poll_recheck)
    return [
        (node, NodeResource(svc, waiters, conf.api.long_poll_max_wait if conf else 0.0)),
        (f"{node}/decommission", DecommissionResource(svc, runs)),
        (f"{node}/decommission/cancel", DecommissionCancelResource(svc)),
        (f"{node}/decommission/preview", DecommissionPreviewResource(svc)),
        (f"{node}/drain", DrainResource(svc)),
        (f"{node}/clear-labels", ClearLabelsResource(svc)),
        (f"{node}/remove-etcd", RemoveEtcdResource(svc)),
        (f"{node}/join-etcd", JoinEtcdResource(svc)),
        (f"{node}/shutdown-kubelet", ShutdownKubeletResource(svc)),
        (f"{node}/remove-from-cluster", RemoveFromClusterResource(svc)),
        (f"{API_PREFIX}/etcd-cluster-health-statuses", EtcdHealthResource(svc)),
        (f"{API_PREFIX}/node-labels/{{node_id}}", NodeLabelsResource(svc)),
        (f"{API_PREFIX}/validatedesign", ValidateDesignResource(svc)),
        (f"{API_PREFIX}/join-scripts", JoinScriptsResource(svc)),
    ]


def create_app(conf: cfg.ConfigOpts, deps: Deps | None = None) -> ServiceApp:
    deps = deps or build_deps(conf)
    app = create_service_app(service_spec(conf, config.SERVICE,
                                          routes(deps.promenade, conf, deps.runs),
                                          policy.list_rules(), deps.health_checks,
                                          registry=deps.metrics.registry,
                                          idempotency=deps.idempotency))
    # After the routes: a path under them that none matched (a name holding '/').
    sink = NodePathSink("promenade:get_node", node_paths(f"{API_PREFIX}/nodes",
                                                         f"{API_PREFIX}/node-labels"))
    app.add_sink(sink, sink.pattern)
    return app


def get_app() -> WSGIApplication:
    conf = config.load()
    app: WSGIApplication = wsgi_entry(conf, create_app(conf))
    return app
