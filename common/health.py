"""Health checks for a service's dependencies, each giving one HealthMessage."""

from __future__ import annotations

from collections.abc import Callable

from common.api import API_PREFIX
from common.httpclient import ServiceClient
from common.status import Message, health_message

HealthCheck = Callable[[], Message]


def peer_check(name: str, client: ServiceClient) -> HealthCheck:
    """A peer service is healthy when its /api/v1.0/health answers 204."""

    def check() -> Message:
        try:
            resp = client.raw("GET", f"{API_PREFIX}/health", read_timeout=5.0)
        except Exception as exc:  # any failure to reach the peer is an unhealthy dependency
            return health_message(name, f"{name} unreachable: {exc}", error=True)
        ok = resp.status_code == 204
        return health_message(name, f"{name} answered {resp.status_code}", error=not ok)

    check.__name__ = name
    return check


def callable_check(name: str, probe: Callable[[], object]) -> HealthCheck:
    """Healthy when `probe()` returns without raising; its return value is the message."""

    def check() -> Message:
        try:
            result = probe()
        except Exception as exc:  # the probe's failure is the health result
            return health_message(name, f"{name}: {exc}", error=True)
        return health_message(name, str(result or f"{name} reachable"), error=False)

    check.__name__ = name
    return check
