"""What a step returns, and what it gets: typed, frozen outcomes and the per-node context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from common.context import RequestContext
from drydock_api.drivers.ports import OobDriver, Provisioner
from drydock_api.nodes.design import NodeDef


@dataclass(frozen=True)
class Done:
    message: str
    data: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    records: tuple[dict[str, Any], ...] = ()   # each becomes one more message (e.g. per disk)


@dataclass(frozen=True)
class Retry:
    """Not finished yet: call the step again after `delay` seconds at the latest (the engine
    waits; it looks sooner while the situation `note` describes is new, see poll_delay)."""

    delay: float
    note: str


@dataclass(frozen=True)
class Failed:
    reason: str
    details: dict[str, Any] | None = None


Outcome = Done | Retry | Failed


class Labeller(Protocol):
    """Promenade's node-labels endpoint."""

    def put_labels(self, node: str, labels: dict[str, str], ctx: RequestContext) -> None: ...


class NodeRecords(Protocol):
    """Drydock's own node state that steps change (teardown, retirement)."""

    def torn_down(self, name: str, value: bool) -> None: ...

    def clear_reboots(self, name: str) -> int: ...

    def retired(self, name: str) -> tuple[bool, str | None]: ...

    def kept_disks(self, name: str) -> list[str]: ...

    def set_kept_disks(self, name: str, disks: list[str]) -> None: ...


@dataclass(frozen=True)
class StepSettings:
    graceful_timeout: float = 60.0
    power_timeout: float = 300.0
    power_poll: float = 2.0
    release_timeout: float = 1800.0
    maas_poll: float = 5.0
    retry_delay: float = 1.0
    retries: int = 3
    outage_window: float = 0.0  # transient BMC/MAAS failures are retried this long (s)
    enlist_timeout: float = 1800.0
    commission_timeout: float = 3600.0
    deploy_timeout: float = 3600.0
    first_poll: float = 0.1  # MAAS/BMC polls start this soon after a change (s) ...
    poll_backoff: float = 0.1  # ... then wait this fraction of the time since the change


@dataclass
class Ports:
    maas: Provisioner
    oob: OobDriver
    labeller: Labeller | None = None
    retire: Callable[[str, str | None], None] | None = None
    records: NodeRecords | None = None


@dataclass
class NodeContext:
    """Everything one node step may use; `state` survives retries of the same step only."""

    node: NodeDef
    options: dict[str, Any]
    ports: Ports
    settings: StepSettings
    request: RequestContext
    clock: Callable[[], float]
    previous: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    cancelled: Callable[[], bool] = lambda: False


@dataclass
class SiteContext:
    """What a site-level action (no per-node steps) gets: the design's documents and ports."""

    documents: list[dict[str, Any]]
    options: dict[str, Any]
    ports: Ports
    request: RequestContext


@dataclass(frozen=True)
class SiteOutcome:
    ok: bool
    message: str
    messages: list[dict[str, Any]] = field(default_factory=list)


StepFn = Callable[[NodeContext], Outcome]
SiteFn = Callable[[SiteContext], SiteOutcome]


@dataclass(frozen=True)
class StepDef:
    name: str
    fn: StepFn
    timeout: Callable[[StepSettings], float]
