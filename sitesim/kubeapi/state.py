"""The simulated cluster's state as its API, kubelet and controllers see it.

`ClusterState` is what those modules need of `KubeCluster` (which satisfies it): they type
their `cluster` argument with it, so they do not import cluster.py, which imports them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sitesim.hooks import SiteHooks
from sitesim.kubeapi.store import Store


@dataclass
class KubeTimings:
    """Delays of the simulated kubelet and controllers, in seconds."""

    pod_termination_delay: float = 1.0
    recreate_delay: float = 2.0
    kubelet_shutdown_delay: float = 2.0
    not_ready_delay: float = 1.0
    controller_interval: float = 0.5


@dataclass
class NodeSim:
    """What the simulated kubelet of one node is doing."""

    address: str
    ready: bool = True
    kubelet_running: bool = True
    shutdown_enabled: bool = True
    shutdown_at: float | None = None
    unknown_at: float | None = None


@dataclass
class Timers:
    """Due times (on the injected monotonic clock) of pending simulated work."""

    terminate_at: dict[str, float] = field(default_factory=dict)  # pod uid
    create_at: dict[str, float] = field(default_factory=dict)  # controller uid
    stuck: set[str] = field(default_factory=set)  # pod uids whose termination hangs


class ClusterState(Protocol):
    """The parts of `KubeCluster` the simulated API, kubelet and controllers use."""

    hooks: SiteHooks
    timings: KubeTimings
    clock: Callable[[], float]
    store: Store
    lock: threading.RLock
    nodes: dict[str, NodeSim]
    timers: Timers
    kick: threading.Event
    stopping: threading.Event

    def now(self) -> str: ...

    def flush_callbacks(self) -> None: ...

    def sync_node_ready(self, name: str) -> None: ...

    def node_is_schedulable(self, node: dict[str, Any]) -> bool: ...
