"""The narrow interface simulated systems use to count calls and look up injected faults."""

from __future__ import annotations

from typing import Literal, Protocol

FaultEffect = Literal["fail", "hang", "ignore"]


class SiteHooks(Protocol):
    """Implemented by the site model; every simulator reports to it."""

    def record_call(self, system: str, op: str, node: str | None) -> None:
        """Count one call received by `system` (maas|redfish|ipmi|kube|etcd)."""

    def record_operation(self, system: str, op: str, node: str | None, seconds: float) -> None:
        """Note simulated work that starts now and takes `seconds` (a power change, an erase,
        a MAAS deploy, a pod terminating), for whoever measures the site's own time."""

    def fault(self, operation: str, node: str) -> FaultEffect | None:
        """The injected effect for `operation` (e.g. `kube.eviction`) on `node`, if any."""


class NullHooks:
    """Hooks that count nothing and inject nothing (for simulators used on their own)."""

    def record_call(self, system: str, op: str, node: str | None) -> None:
        return None

    def record_operation(self, system: str, op: str, node: str | None, seconds: float) -> None:
        return None

    def fault(self, operation: str, node: str) -> FaultEffect | None:
        return None
