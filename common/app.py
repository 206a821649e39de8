"""The Falcon app factory every service uses: middleware, error rendering, common routes."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING
from wsgiref.types import WSGIApplication

import falcon
import sqlalchemy.exc
from oslo_config import cfg
from oslo_policy.policy import RuleDefault
from prometheus_client import CollectorRegistry

from common import policy
from common.api import API_PREFIX
from common.audit import current_actor, request_actor
from common.auth import Authenticator
from common.context import (
    END_USER_HEADER,
    MARKER_HEADER,
    REQUEST_ID_HEADER,
    RequestContext,
    acting_user,
    current_marker,
    new_id,
    valid_uuid,
)
from common.errors import (
    BY_CODE,
    BadRequest,
    BerthError,
    DatabaseUnavailable,
    InternalError,
    PayloadTooLarge,
)
from common.idempotency import IdempotencyMiddleware, SqlIdempotencyStore
from common.inputcheck import DEFAULT_LIMITS, InputLimits
from common.jsontypes import JSONObject
from common.metrics import MetricsResource, RequestMetrics
from common.openapidoc import openapi_document
from common.policy import Policy
from common.status import Message, status_body

if TYPE_CHECKING:
    from falcon._typing import SyncMiddleware

LOG = logging.getLogger(__name__)
ACCESS_LOG = logging.getLogger("berth.access")

HealthCheck = Callable[[], Message]


@dataclass
class ServiceSpec:
    """What a service hands the factory: its routes, policy, health checks and limits."""

    name: str
    routes: Sequence[tuple[str, object]]
    policy: Policy
    authenticator: Authenticator
    health_checks: Sequence[HealthCheck] = ()
    dependency_checks: Sequence[HealthCheck] = ()
    max_body_bytes: int = 10 * 1024 * 1024
    input_limits: InputLimits = DEFAULT_LIMITS
    service_roles: frozenset[str] = frozenset({"service"})
    idempotency: SqlIdempotencyStore = field(default_factory=SqlIdempotencyStore.in_memory)
    extra_middleware: Sequence[SyncMiddleware[falcon.Request, falcon.Response]] = field(
        default_factory=list)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)


class ServiceApp(falcon.App):  # type: ignore[misc,type-arg]
    """A falcon.App that remembers the routes it was given (checked against OpenAPI)."""

    berth_spec: ServiceSpec | None = None

    @cached_property
    def berth_routes(self) -> list[tuple[str, object]]:
        return []

    def add_route(self, uri_template: str, resource: object, **kwargs: object) -> None:
        super().add_route(uri_template, resource, **kwargs)
        self.berth_routes.append((uri_template, resource))


class ContextMiddleware:
    """Marker, request id, end user, auth, body limit and the JSON access log."""

    def __init__(self, spec: ServiceSpec) -> None:
        self._spec = spec

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        marker = req.get_header(MARKER_HEADER)
        ctx = RequestContext(marker=marker if marker and valid_uuid(marker) else new_id())
        ctx.token = req.get_header("X-Auth-Token")
        identity = self._spec.authenticator.authenticate(req.headers)
        if identity is not None:
            ctx.user, ctx.roles, ctx.authenticated = identity.user, list(identity.roles), True
            ctx.end_user, ctx.on_behalf_of = acting_user(
                identity.user, ctx.roles, _end_user_header(req), self._spec.service_roles)
        req.context.berth = ctx
        current_actor.set(request_actor(ctx))  # whom this request's changes are audited as
        req.context.policy = self._spec.policy
        req.context.max_body_bytes = self._spec.max_body_bytes
        req.context.input_limits = self._spec.input_limits
        req.context.started = time.monotonic()
        current_marker.set(ctx.marker)
        resp.set_header(MARKER_HEADER, ctx.marker)
        resp.set_header(REQUEST_ID_HEADER, ctx.request_id)
        if "\x00" in req.path or "%00" in req.query_string or "\x00" in req.query_string:
            raise BadRequest("The path or query holds a NUL character", reason="UnsafeInput")
        length = req.content_length
        if length is not None and length > self._spec.max_body_bytes:
            raise PayloadTooLarge(
                f"Body of {length} bytes exceeds the limit of {self._spec.max_body_bytes} bytes"
            )

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        ctx: RequestContext | None = getattr(req.context, "berth", None)
        if ctx is None:
            return
        resp.set_header(MARKER_HEADER, ctx.marker)
        resp.set_header(REQUEST_ID_HEADER, ctx.request_id)
        elapsed = time.monotonic() - getattr(req.context, "started", time.monotonic())
        ACCESS_LOG.info(
            "%s %s %s", req.method, req.relative_uri, resp.status,
            extra={"fields": {
                "service": self._spec.name, "method": req.method, "path": req.path,
                "status": resp.status_code if hasattr(resp, "status_code") else str(resp.status),
                "request_id": ctx.request_id, "user": ctx.user, "end_user": ctx.end_user,
                "duration_ms": round(elapsed * 1000, 2),
            }},
        )


def _end_user_header(req: falcon.Request) -> str | None:
    value = req.get_header(END_USER_HEADER)
    if value is None:
        return None
    if len(value) > 256 or not value.isprintable():
        raise BadRequest(f"{END_USER_HEADER} must be at most 256 printable characters",
                         reason="UnsafeInput")
    return value


def _render(resp: falcon.Response, body: Mapping[str, object], code: int) -> None:
    resp.status = falcon.code_to_http_status(code)
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(body)


def handle_berth_error(req: falcon.Request, resp: falcon.Response, ex: BerthError,
                       params: dict[str, object]) -> None:
    if ex.code >= 500:
        LOG.error("%s: %s", ex.instance_reason, ex.message)
    if ex.retry_after is not None:
        resp.set_header("Retry-After", str(ex.retry_after))
    _render(resp, ex.to_status(), ex.code)


# "Cannot reach / lost the database" (a server down or refusing connections, a dropped
# connection, an unopenable or read-only SQLite file, the pool exhausted): an outage to retry,
# not a bug. SQLAlchemy wraps the driver's PEP 249 errors; a raw DBAPI connection (checkout
# from the pool) raises the driver's own, which PEP 249 names alike.
OUTAGES = (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError,
           sqlalchemy.exc.TimeoutError)
DBAPI_OUTAGES = frozenset({"OperationalError", "InterfaceError"})
DRIVERS = frozenset({"sqlite3", "psycopg", "psycopg2"})


def _is_outage(exc: BaseException) -> bool:
    if isinstance(exc, OUTAGES):
        return True
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        return bool(exc.connection_invalidated)
    return any(cls.__name__ in DBAPI_OUTAGES and cls.__module__.split(".")[0] in DRIVERS
               for cls in type(exc).__mro__)


def database_outage(exc: BaseException) -> DatabaseUnavailable | None:
    """DatabaseUnavailable (503, Retry-After) when `exc`, or an exception it was raised
    from, is the database being unreachable; None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_outage(current):
            cause = str(getattr(current, "orig", None) or current).strip().splitlines()
            return DatabaseUnavailable(
                "The service's database is unavailable; try again later"
                + (f" ({cause[0][:300]})" if cause else ""))
        current = current.__cause__ or current.__context__
    return None


def handle_http_error(req: falcon.Request, resp: falcon.Response, ex: falcon.HTTPError,
                      params: dict[str, object]) -> None:
    cls = BY_CODE.get(ex.status_code, BerthError)
    text = ex.description or ex.title or cls.title
    if ex.status_code == 404 and not ex.description:
        text = f"No route for {req.method} {req.path}"
    if ex.status_code == 405 and not ex.description:
        text = f"Method {req.method} is not allowed on {req.path}"
    body = cls(text).to_status()
    body["code"] = ex.status_code
    headers = ex.headers or {}
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    for pair in pairs:
        resp.set_header(str(pair[0]), str(pair[1]))
    _render(resp, body, ex.status_code)


def handle_unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception,
                      params: dict[str, object]) -> None:
    outage = database_outage(ex)
    if outage is not None:
        handle_berth_error(req, resp, outage, params)
        return
    LOG.exception("Unexpected error on %s %s", req.method, req.path)
    err = InternalError("An unexpected error occurred; see the service log")
    _render(resp, err.to_status(), err.code)


class VersionsResource:
    auth_required = False

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"v1.0": {"path": API_PREFIX, "status": "stable"}}


class HealthResource:
    auth_required = False

    def __init__(self, checks: Sequence[HealthCheck]) -> None:
        self._checks = checks

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        failed = [m for m in run_checks(self._checks) if m["error"]]
        if failed:
            resp.set_header("Retry-After", str(DatabaseUnavailable.default_retry_after))
            _render(resp, status_body(503, "Unhealthy: " + "; ".join(
                str(m["message"]) for m in failed)[:1000], reason="ServiceUnavailable",
                                      messages=failed, retry=True), 503)
        else:
            resp.status = falcon.HTTP_204


class ExtendedHealthResource:
    def __init__(self, service: str, checks: Sequence[HealthCheck]) -> None:
        self._rule = f"{service}:get_health_extended"
        self._checks = checks

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        policy.check(req, self._rule)
        messages = run_checks(self._checks)
        failing = [str(m.get("name") or m["message"]) for m in messages if m["error"]]
        bad = bool(failing)
        code = 503 if bad else 200
        _render(resp, status_body(code, f"Unhealthy: {', '.join(failing)}" if bad else "Healthy",
                                  reason="ServiceUnavailable" if bad else "Success",
                                  messages=messages, retry=bad), code)


def run_checks(checks: Sequence[HealthCheck]) -> list[Message]:
    out = []
    for check in checks:
        try:
            out.append(check())
        except Exception as exc:  # a failing check is a health result, not a crash
            name = getattr(check, "__name__", "check")
            out.append({"message": f"{name}: {exc}", "error": True, "kind": "HealthMessage",
                        "name": name})
    return out


def load_openapi(service: str) -> JSONObject:
    return openapi_document(service)


class OpenApiResource:
    auth_required = False

    def __init__(self, service: str) -> None:
        self._doc = load_openapi(service)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._doc


def create_service_app(spec: ServiceSpec) -> ServiceApp:
    """Build the service's WSGI app: common routes first, then the service's own."""
    app = ServiceApp(middleware=[ContextMiddleware(spec), RequestMetrics(spec.name, spec.registry),
                                 IdempotencyMiddleware(spec.idempotency),
                                 *spec.extra_middleware])
    app.berth_spec = spec
    app.req_options.strip_url_path_trailing_slash = True
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(BerthError, handle_berth_error)
    app.add_route("/versions", VersionsResource())
    app.add_route(f"{API_PREFIX}/health", HealthResource(spec.health_checks))
    app.add_route(f"{API_PREFIX}/health/extended",
                  ExtendedHealthResource(spec.name,
                                         [*spec.health_checks, *spec.dependency_checks]))
    app.add_route(f"{API_PREFIX}/openapi.json", OpenApiResource(spec.name))
    app.add_route("/metrics", MetricsResource(spec.registry))
    for template, resource in spec.routes:
        app.add_route(template, resource)
    return app


def service_spec(conf: cfg.ConfigOpts, name: str, routes: Sequence[tuple[str, object]],
                 rules: Sequence[RuleDefault], checks: Sequence[HealthCheck] = (),
                 dependency_checks: Sequence[HealthCheck] = (),
                 registry: CollectorRegistry | None = None,
                 idempotency: SqlIdempotencyStore | None = None) -> ServiceSpec:
    """A ServiceSpec whose policy, authenticator and body limit come from `conf`.

    `checks` decide `/health` (what this process needs to serve: its database); both they and
    `dependency_checks` (peers, MAAS, Kubernetes) are listed by `/health/extended`, so a peer's
    outage shows there without making every replica of this service unready. `registry` is
    the one the service's own metrics were created in (served at /metrics with the request
    metrics); a fresh one when the service has none. `idempotency`: the Idempotency-Key store
    on the service's database (one of its own in memory when none is given)."""
    from common.auth import make_authenticator

    return ServiceSpec(name=name, routes=routes, policy=Policy(conf, rules),
                       authenticator=make_authenticator(conf), health_checks=checks,
                       dependency_checks=dependency_checks,
                       max_body_bytes=conf.api.max_body_bytes,
                       input_limits=InputLimits(
                           max_depth=conf.api.max_json_depth,
                           max_string=conf.api.max_string_length,
                           max_key=conf.api.max_key_length,
                           max_items=conf.api.max_list_items),
                       service_roles=frozenset(conf.auth.service_roles),
                       idempotency=idempotency or SqlIdempotencyStore.in_memory(
                           ttl=conf.api.idempotency_ttl, lease=conf.api.idempotency_lease),
                       registry=registry if registry is not None else CollectorRegistry())


def wsgi_entry(conf: cfg.ConfigOpts, app: ServiceApp) -> WSGIApplication:
    """The callable gunicorn serves: keystonemiddleware in front when configured."""
    from common.auth import wrap_keystone
    from common.logging import setup_logging

    setup_logging(conf.logging.level, conf.logging.json)
    if conf.auth.strategy == "keystone":
        return wrap_keystone(app, conf)
    return app
