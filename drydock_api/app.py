"""Drydock's WSGI app: `create_app(conf, deps)` for tests, `get_app()` for gunicorn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg

from common.app import HealthCheck, ServiceApp, create_service_app, service_spec, wsgi_entry
from drydock_api import config, policy


@dataclass
class Deps:
    """Drydock's collaborators, built from config by `build_deps` or given by tests."""

    health_checks: list[HealthCheck] = field(default_factory=list)


def build_deps(conf: cfg.ConfigOpts) -> Deps:
    return Deps(health_checks=[])


def create_app(conf: cfg.ConfigOpts, deps: Deps | None = None) -> ServiceApp:
    deps = deps or build_deps(conf)
    routes: list[tuple[str, object]] = []
    return create_service_app(
        service_spec(conf, config.SERVICE, routes, policy.list_rules(), deps.health_checks))


def get_app() -> Any:
    conf = config.load()
    return wsgi_entry(conf, create_app(conf))
