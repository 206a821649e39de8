"""Drydock's WSGI app: `create_app(conf, deps)` for tests, `get_app()` for gunicorn."""

from __future__ import annotations

from dataclasses import dataclass, field
from wsgiref.types import WSGIApplication

from oslo_config import cfg

from common.api import API_PREFIX as P
from common.app import HealthCheck, ServiceApp, create_service_app, service_spec, wsgi_entry
from common.audit_api import audit_routes
from common.idempotency import SqlIdempotencyStore
from common.nodepaths import NodePathSink, node_paths
from drydock_api import config, policy
from drydock_api.db.history import TaskHistory
from drydock_api.metrics import DrydockMetrics
from drydock_api.resources.bootactions import BootActionAssetsResource, BootActionResource
from drydock_api.resources.budgets import BudgetSlotResource, BudgetSlotsResource
from drydock_api.resources.builddata import NodeBuildDataResource, TaskBuildDataResource
from drydock_api.resources.nodes import (
    NodeFilterResource,
    NodeResource,
    NodesResource,
    ValidateDesignResource,
    WipePlanResource,
)
from drydock_api.resources.reboot import (
    NodeProvideResource,
    NodeRebootKeyResource,
    NodeRebootResource,
)
from drydock_api.resources.tasks import (
    TaskPreviewResource,
    TaskResource,
    TasksResource,
    TaskTerminateResource,
)
from drydock_api.runtime import Runtime, build_runtime
from drydock_api.tasks.builddata import BuildData
from drydock_api.tasks.preview import TaskPreview
from drydock_api.tasks.retention import TaskRetention


@dataclass
class Deps:
    """Drydock's collaborators, built from config by `build_deps` or given by tests."""

    runtime: Runtime
    health_checks: list[HealthCheck] = field(default_factory=list)
    dependency_checks: list[HealthCheck] = field(default_factory=list)
    metrics: DrydockMetrics = field(default_factory=DrydockMetrics)


def build_deps(conf: cfg.ConfigOpts) -> Deps:
    metrics = DrydockMetrics()
    runtime = build_runtime(conf, metrics=metrics)
    return Deps(runtime=runtime, health_checks=runtime.health_checks(),
                dependency_checks=runtime.dependency_checks(), metrics=metrics)


def create_app(conf: cfg.ConfigOpts, deps: Deps | None = None) -> ServiceApp:
    deps = deps or build_deps(conf)
    rt = deps.runtime
    history = TaskHistory(rt.store)
    builddata = BuildData(history, rt.ports.machines)
    routes: list[tuple[str, object]] = [
        (f"{P}/tasks", TasksResource(rt.service, rt.loader.check,
                                     TaskRetention(history, rt.store.clock))),
        (f"{P}/tasks/preview", TaskPreviewResource(TaskPreview(
            rt.service, rt.loader.design, rt.inventory, rt.nodes, rt.ports.erase))),
        (f"{P}/tasks/{{task_id}}", TaskResource(rt.service, rt.waiters,
                                                 conf.api.long_poll_max_wait, builddata)),
        (f"{P}/tasks/{{task_id}}/builddata", TaskBuildDataResource(builddata)),
        (f"{P}/tasks/{{task_id}}/terminate", TaskTerminateResource(rt.service)),
        (f"{P}/nodefilter", NodeFilterResource(rt.loader.design, rt.nodes)),
        (f"{P}/nodes", NodesResource(rt.inventory)),
        (f"{P}/nodes/{{name}}", NodeResource(rt.inventory, rt.node_service,
                                             rt.bootactions)),
        (f"{P}/nodes/{{name}}/builddata", NodeBuildDataResource(builddata)),
        (f"{P}/nodes/{{name}}/provide", NodeProvideResource(rt.node_service)),
        (f"{P}/nodes/{{name}}/reboot", NodeRebootResource(rt.node_service)),
        (f"{P}/nodes/{{name}}/reboot/{{key}}", NodeRebootKeyResource(rt.node_service)),
        (f"{P}/validatedesign", ValidateDesignResource(
            rt.loader.documents, rt.ports.backends.names() if rt.ports.backends else None)),
        *bootaction_routes(rt),
        (f"{P}/budgets/slots", BudgetSlotsResource(rt.budgets)),
        (f"{P}/budgets/slots/{{holder}}", BudgetSlotResource(rt.budgets)),
        (f"{P}/wipeplan", WipePlanResource(rt.loader.design, rt.ports.erase, rt.ports.machines,
                                           rt.ports.backends)),
        *audit_routes(rt.store.engine, config.SERVICE),
    ]
    app = create_service_app(
        service_spec(conf, config.SERVICE, routes, policy.list_rules(), deps.health_checks,
                     deps.dependency_checks, deps.metrics.registry,
                     SqlIdempotencyStore.from_conf(rt.store.engine, conf)))
    # After the routes: a path under /nodes/ that none matched (a name holding '/').
    sink = NodePathSink("drydock:get_node", node_paths(f"{P}/nodes"))
    app.add_sink(sink, sink.pattern)
    return app


def bootaction_routes(rt: Runtime) -> list[tuple[str, object]]:
    """The node-facing boot action API (the node's key authenticates it, not a token)."""
    if rt.bootactions is None:
        return []
    nodes = f"{P}/bootactions/nodes/{{hostname}}"
    return [(f"{nodes}/units", BootActionAssetsResource(rt.bootactions, "unit")),
            (f"{nodes}/files", BootActionAssetsResource(rt.bootactions, "file")),
            (f"{P}/bootactions/{{action_id}}", BootActionResource(rt.bootactions))]


def get_app() -> WSGIApplication:
    """For gunicorn: the app, with `[worker] threads` task workers inside this process."""
    conf = config.load()
    deps = build_deps(conf)
    if conf.worker.threads:
        deps.runtime.start_workers(conf.worker.threads)
        if conf.reboot.enabled:
            deps.runtime.start_reconciler()
    return wsgi_entry(conf, create_app(conf, deps))
