"""Prometheus metrics of a service: request counts and latencies by route and code."""

from __future__ import annotations

import time

import falcon
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest


class RequestMetrics:
    """Middleware counting requests and timing them per route template, method and code."""

    def __init__(self, service: str, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "berth_http_requests", "HTTP requests served",
            ["service", "route", "method", "code"], registry=registry)
        self.latency = Histogram(
            "berth_http_request_seconds", "HTTP request latency",
            ["service", "route", "method"], registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600))
        self._service = service

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.metrics_started = time.monotonic()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        route = req.uri_template or "unmatched"
        code = str(resp.status_code) if hasattr(resp, "status_code") else str(resp.status)[:3]
        started = getattr(req.context, "metrics_started", time.monotonic())
        self.requests.labels(self._service, route, req.method, code).inc()
        self.latency.labels(self._service, route, req.method).observe(time.monotonic() - started)


class MetricsResource:
    """`GET /metrics` in the Prometheus text format (open, like health, for scrapers)."""

    auth_required = False

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self._registry)
