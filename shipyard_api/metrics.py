"""Shipyard's metrics: actions and steps by state (read at scrape time), step durations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

from common.metrics import BUCKETS, StateCounts
from shipyard_api.workflow.store import ActionStore


class ShipyardMetrics:
    """Created with the app's registry; the engines report step ends to `observe_step`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.step_seconds = Histogram(
            "berth_shipyard_step_seconds",
            "Workflow step durations, first start to end, by step name and final state",
            ["step", "state"], registry=self.registry, buckets=BUCKETS)
        self.steps_stuck = Counter(
            "berth_shipyard_steps_stuck",
            "Step attempts found running past their attempt timeout (StepStuck)",
            ["step"], registry=self.registry)

    def count_stuck(self, step: str) -> None:
        self.steps_stuck.labels(step).inc()

    def observe_step(self, step: str, state: str, seconds: float) -> None:
        self.step_seconds.labels(step, state).observe(seconds)

    def watch(self, store: ActionStore) -> None:
        """Serve the store's actions and steps by state (queried on each scrape)."""

        def actions() -> Iterable[tuple[Sequence[str], float]]:
            return [((state,), n) for state, n in store.state_counts()[0].items()]

        def steps() -> Iterable[tuple[Sequence[str], float]]:
            return [((state,), n) for state, n in store.state_counts()[1].items()]

        self.registry.register(StateCounts("berth_shipyard_actions",
                                           "Actions stored, by state", ["state"], actions))
        self.registry.register(StateCounts("berth_shipyard_steps",
                                           "Workflow steps stored, by state", ["state"], steps))
