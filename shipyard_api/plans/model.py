"""A plan as it is composed: per-node sections, groups, calls, blockers, warnings, facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from common.clients.generated.shipyard import Call, Finding
from common.context import RequestContext
from shipyard_api.actions.ports import Services
from shipyard_api.plans.facts import Fact
from shipyard_api.workflow.models import ActionRow

Source = Literal["shipyard", "promenade", "drydock"]  # the service a finding or call is of


@dataclass(frozen=True)
class Reader:
    """What composing reads with: the services, the caller's context, the time."""

    svc: Services
    rc: RequestContext
    now: float
    active: tuple[ActionRow, ...] = ()  # actions not yet ended


@dataclass
class Composition:
    revision_id: int | None = None
    design_ref: str | None = None
    nodes: list[dict[str, object]] = field(default_factory=list)
    groups: list[dict[str, object]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    blockers: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def block(self, source: Source, message: str, node: str | None = None) -> None:
        self.blockers.append({"node": node, "source": source, "message": message})

    def warn(self, source: Source, message: str, node: str | None = None) -> None:
        self.warnings.append({"node": node, "source": source, "message": message})


def call(service: Source, request: str, why: str, *, node: str | None = None,
         step: str | None = None, then: list[str] | None = None) -> Call:
    """One request Shipyard's step would make: to whom, what, why, and what it runs there."""
    return {"service": service, "request": request, "why": why, "node": node, "step": step,
            "runs": list(then or [])}
