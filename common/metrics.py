"""Prometheus metrics of a service: request counts and latencies by route and code, and the
helpers each service's own metrics module uses (a call timer, scrape-time state counts).

Each process has its own registry: under gunicorn with several workers a scrape reaches one
worker, so request and event figures are that worker's (the default is one worker with threads
per replica; scale with replicas). Counts kept in the database are read at scrape time, so
they are the same whichever process answers."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import falcon
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600)


class RequestMetrics:
    """Middleware counting requests and timing them per route template, method and code."""

    def __init__(self, service: str, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "berth_http_requests", "HTTP requests served",
            ["service", "route", "method", "code"], registry=registry)
        self.latency = Histogram(
            "berth_http_request_seconds", "HTTP request latency",
            ["service", "route", "method"], registry=registry,
            buckets=BUCKETS)
        self._service = service
        # the labelled series of each (route, method, code), looked up once: prometheus's
        # labels() takes a lock and builds a key on every call
        self._series: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.metrics_started = time.monotonic()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        # labels come from bounded sets only (route templates, known methods, status codes),
        # so no client can grow the number of series
        route = req.uri_template or "unmatched"
        method = req.method if req.method in KNOWN_METHODS else "other"
        code = str(resp.status_code) if hasattr(resp, "status_code") else str(resp.status)[:3]
        started = getattr(req.context, "metrics_started", time.monotonic())
        series = self._series.get((route, method, code))
        if series is None:
            series = (self.requests.labels(self._service, route, method, code),
                      self.latency.labels(self._service, route, method))
            self._series[(route, method, code)] = series
        series[0].inc()
        series[1].observe(time.monotonic() - started)


class MetricsResource:
    """`GET /metrics` in the Prometheus text format (open, like health, for scrapers)."""

    auth_required = False

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self._registry)


Observe = Callable[[str, str, float], None]
"""What domain code is given to record an event: (what, outcome, seconds)."""


def observer(histogram: Histogram, *fixed: str) -> Observe:
    """An `Observe` feeding `histogram`, whose labels are `fixed` + (what, outcome)."""

    def observe(what: str, outcome: str, seconds: float) -> None:
        histogram.labels(*fixed, what, outcome).observe(seconds)

    return observe


@contextmanager
def timer(histogram: Histogram, *labels: str,
          clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Time the block into `histogram` under `labels` + (ok|error), error when it raises."""
    started, outcome = clock(), "error"
    try:
        yield
        outcome = "ok"
    finally:
        histogram.labels(*labels, outcome).observe(clock() - started)


class StateCounts(Collector):
    """A gauge family computed at scrape time (e.g. rows by state with one GROUP BY query),
    so every process reports the same figures whichever of them is scraped."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str],
                 read: Callable[[], Iterable[tuple[Sequence[str], float]]]) -> None:
        self._name, self._doc, self._labels, self._read = name, documentation, labels, read

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(self._name, self._doc, labels=list(self._labels))]

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(self._name, self._doc, labels=list(self._labels))
        for labels, value in self._read():
            family.add_metric(list(labels), value)
        return [family]
