"""Request metrics: each request is counted and timed under its route, method and code, and a
series' labelled children are looked up once (not on every request)."""

import falcon
import falcon.testing
from prometheus_client import CollectorRegistry, Counter, Histogram

from common.metrics import RequestMetrics


class Thing:
    def on_get(self, req, resp, name):
        if name == "missing":
            raise falcon.HTTPNotFound()
        resp.media = {"name": name}


def client(registry):
    app = falcon.App(middleware=[RequestMetrics("svc", registry)])
    app.add_route("/things/{name}", Thing())
    return falcon.testing.TestClient(app)


def test_requests_are_counted_and_timed_per_route_method_and_code(monkeypatch):
    lookups = []
    for cls in (Counter, Histogram):
        real = cls.labels

        def counting(self, *values, _real=real):
            lookups.append(values)
            return _real(self, *values)

        monkeypatch.setattr(cls, "labels", counting)
    registry = CollectorRegistry()
    test = client(registry)
    for name in ("a", "b", "c", "missing", "missing"):
        test.simulate_get(f"/things/{name}")
    count = registry.get_sample_value
    route = {"service": "svc", "route": "/things/{name}", "method": "GET"}
    assert count("berth_http_requests_total", {**route, "code": "200"}) == 3
    assert count("berth_http_requests_total", {**route, "code": "404"}) == 2
    assert count("berth_http_request_seconds_count", route) == 5
    assert len(lookups) == 4  # one counter and one histogram lookup per code seen
