"""How an action is described to the engine: its steps, their policies, and the plan of a run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from common import workflow
from common.context import RequestContext
from common.jsontypes import JSONObject
from shipyard_api.workflow.services import DocumentsPort, Services

# An action's parameters as stored once its definition prepared them (each key only where
# the action takes it; `plan_id` where a plan created the action).
ActionParameters = TypedDict("ActionParameters", {
    "target_nodes": list[str] | None,
    "target-revision": str,
    "allow-intermediate-commits": bool,
    "preserve-local-storage": bool,
    "os-disk-erase": str,
    "erase": str,
    "disrupt-pdbs": list[dict[str, str]],
    "disrupt-after": int,
    "disrupt-pdbs-allowed-by": str | None,
    "budget": str,
    "power_policy": str,
    "grace_period": float,
    "plan_id": str,
}, total=False)


@dataclass
class StepContext:
    """Everything one run of one step gets: inputs, its memo, earlier outputs, the services."""

    action_id: str
    action_name: str
    parameters: ActionParameters
    marker: str
    user: str | None
    revision_id: int | None
    step_id: str
    name: str
    node: str | None
    attempt: int
    memo: JSONObject
    outputs: Mapping[str, JSONObject]
    services: Services
    now: float
    # Shows progress while the step runs: replaces the running step's details.
    report: Callable[[Mapping[str, object]], object] = lambda details: None

    def key(self, *extra: str) -> str:
        """The Idempotency-Key of this step's calls: stable across retries and restarts."""
        return ":".join([self.action_id, self.step_id, *extra])

    def request_context(self) -> RequestContext:
        """The context forwarded to peers: the action's marker and user."""
        return RequestContext(marker=self.marker, end_user=self.user, user=self.user)

    def output(self, name: str) -> JSONObject:
        """Output of the earlier step `name` (this node's, else the action-wide one)."""
        if self.node is not None and step_id(name, self.node) in self.outputs:
            return self.outputs[step_id(name, self.node)]
        return self.outputs.get(name, {})


# One step of an action (see common.workflow.StepDef): `per_node` steps form a chain per
# target node; `cancel` stops the work a running or waiting step started elsewhere (on stop
# and on timeout).
StepDef = workflow.StepDef[StepContext]
StepFn = Callable[[StepContext], workflow.Outcome]


@dataclass(frozen=True)
class FinishContext:
    """What an action's finaliser sees when the action ends."""

    action_id: str
    revision_id: int | None
    succeeded: bool
    step_states: Mapping[str, str]
    outputs: Mapping[str, JSONObject]
    services: Services


@dataclass(frozen=True)
class Prepared:
    """An action request after validation: normalised parameters and what it touches."""

    parameters: ActionParameters
    targets: list[str] | None
    revision_id: int | None
    validations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ActionDefinition:
    name: str
    steps: Sequence[StepDef]
    prepare: Callable[[Mapping[str, Any], DocumentsPort], Prepared]
    finish: Callable[[FinishContext], None] | None = None
    # Checks with the peers before the action is admitted (raise a 4xx error to refuse it):
    # (prepared, services, request context).
    admit: Callable[[Prepared, Services, RequestContext], None] | None = None

    def step(self, name: str) -> StepDef:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)


@dataclass(frozen=True)
class PlannedStep:
    step_id: str
    name: str
    node: str | None
    depends_on: tuple[str, ...]


def step_id(name: str, node: str | None) -> str:
    return name if node is None else f"{name}.{node}"


def plan(definition: ActionDefinition, targets: Sequence[str] | None) -> list[PlannedStep]:
    """Steps of one run: action-wide steps in order, per-node steps as one chain per target."""
    out: list[PlannedStep] = []
    tails: list[str] = []
    node_tail: dict[str, str] = {}
    for s in definition.steps:
        if s.per_node:
            for node in targets or []:
                prev = node_tail.get(node)
                deps = (prev,) if prev else tuple(tails)
                sid = step_id(s.name, node)
                out.append(PlannedStep(sid, s.name, node, deps))
                node_tail[node] = sid
        else:
            deps = tuple(node_tail.values()) if node_tail else tuple(tails)
            out.append(PlannedStep(s.name, s.name, None, deps))
            tails, node_tail = [s.name], {}
    return out
