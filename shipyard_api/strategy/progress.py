"""The baremetal process of spec 001 as a pure state machine: which Drydock call comes next,
what each call's results do to nodes and groups, and the final report.

A `Deployment` is plain data (`to_dict`/`from_dict`) so a workflow step can keep it in its
memo between polls and resume it after a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain

from common.jsontypes import JSONObject, as_list, as_object
from shipyard_api.strategy.criteria import missed_criteria
from shipyard_api.strategy.model import Group, Strategy, parse_strategy, strategy_data
from shipyard_api.strategy.order import processing_order

# Node statuses (unique per node for the whole action).
NOT_STARTED, PREPARED, SUCCESS, FAILURE = "not started", "prepared", "success", "failure"
# Group statuses; the report shows pending/preparing/deploying as not_started.
PENDING, PREPARING, DEPLOYING = "pending", "preparing", "deploying"
SUCCEEDED, FAILED = "succeeded", "failed"
PREPARE, DEPLOY = "prepare", "deploy"

# phase -> (node status a node must have to be sent, status it gets on success)
PHASES: dict[str, tuple[str, str]] = {PREPARE: (NOT_STARTED, PREPARED), DEPLOY: (PREPARED, SUCCESS)}
# phase -> node statuses counted as successful when the group's criteria are checked
COUNTS_AS_SUCCESS: dict[str, tuple[str, ...]] = {PREPARE: (PREPARED, SUCCESS), DEPLOY: (SUCCESS,)}
GROUP_STATUS_OF_PHASE = {PREPARE: PREPARING, DEPLOY: DEPLOYING}


@dataclass(frozen=True)
class Call:
    """One Drydock task to run: `phase` (prepare|deploy) of `group` on exactly `nodes`."""

    group: str
    phase: str
    nodes: tuple[str, ...]

    @property
    def action(self) -> str:
        return f"{self.phase}_nodes"


class Deployment:
    """Groups processed one at a time in dependency order, each prepared then deployed."""

    def __init__(self, strategy: Strategy, membership: Mapping[str, Iterable[str]]) -> None:
        self.strategy = strategy
        self.groups = {g.name: g for g in strategy.groups}
        self.order = processing_order(strategy)
        self.members = {g: list(membership.get(g, ())) for g in self.order}
        self.nodes: dict[str, str] = dict.fromkeys(
            chain.from_iterable(self.members[g] for g in self.order), NOT_STARTED)
        self.status = {g: PENDING for g in self.order}
        self.reason: dict[str, str | None] = {g: None for g in self.order}
        self.current: tuple[str, str] | None = None
        self.history: list[dict[str, str]] = []

    # -- driving ----------------------------------------------------------------------
    def next_call(self) -> Call | None:
        """The next Drydock call, settling groups that need none; None when all are done."""
        while True:
            if self.current is None and not self._start_next_group():
                return None
            assert self.current is not None
            group, phase = self.current
            wanted, _ = PHASES[phase]
            eligible = tuple(n for n in self.members[group] if self.nodes[n] == wanted)
            if eligible:
                return Call(group, phase, eligible)
            self._log(group, phase, "success", "no node needed this phase")
            self._after_phase(group, phase)

    def record(self, call: Call, succeeded: Iterable[str], why: str = "") -> None:
        """The result of `call`: nodes not reported successful failed (`why`, if given)."""
        ok = set(succeeded)
        _, done_status = PHASES[call.phase]
        for n in call.nodes:
            self.nodes[n] = done_status if n in ok else FAILURE
        failed = [n for n in call.nodes if n not in ok]
        self._log(call.group, call.phase, "failed" if failed else "success",
                  f"failed: {', '.join(failed)}" + (f" ({why})" if why else "")
                  if failed else "")
        self._after_phase(call.group, call.phase)

    def record_failure(self, call: Call, reason: str) -> None:
        """The call itself failed (timeout, refused task): its nodes fail and so does the group."""
        for n in call.nodes:
            self.nodes[n] = FAILURE
        self._log(call.group, call.phase, "failed", reason)
        if call.phase == PREPARE:
            self._log(call.group, DEPLOY, "failed", "due to prepare failure")
        self._fail(call.group, f"{call.phase} phase: {reason}")

    # -- results ----------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return all(s in (SUCCEEDED, FAILED) for s in self.status.values())

    def failed_critical(self) -> list[str]:
        return [g for g in self.order if self.status[g] == FAILED and self.groups[g].critical]

    def report(self) -> dict[str, object]:
        """Spec 001's report: groups (name, critical, status, reason, nodes) and node statuses."""
        groups = []
        for g in self.order:
            status = self.status[g]
            shown = status if status in (SUCCEEDED, FAILED) else "not_started"
            in_progress = status in (PREPARING, DEPLOYING)
            reason = self.reason[g] or (f"in progress: {status}" if in_progress else None)
            groups.append({"name": g, "critical": self.groups[g].critical, "status": shown,
                           "reason": reason, "nodes": list(self.members[g])})
        return {"groups": groups, "nodes": dict(self.nodes)}

    # -- internals --------------------------------------------------------------------
    def _start_next_group(self) -> bool:
        for g in self.order:
            if self.status[g] != PENDING:
                continue
            failed_deps = [d for d in self.groups[g].depends_on
                           if self.status.get(d) == FAILED]
            if failed_deps:
                why = f"dependency {', '.join(failed_deps)} failed"
                for phase in (PREPARE, DEPLOY):
                    self._log(g, phase, "failed", "due to dependency")
                self._fail(g, why)
                continue
            if all(self.status.get(d, SUCCEEDED) == SUCCEEDED for d in self.groups[g].depends_on):
                self.current = (g, PREPARE)
                self.status[g] = PREPARING
                return True
        return False

    def _after_phase(self, group: str, phase: str) -> None:
        total = self.members[group]
        ok = sum(1 for n in total if self.nodes[n] in COUNTS_AS_SUCCESS[phase])
        bad = sum(1 for n in total if self.nodes[n] == FAILURE)
        missed = missed_criteria(self.groups[group].success_criteria, ok, bad, len(total))
        if missed:
            if phase == PREPARE:
                self._log(group, DEPLOY, "failed", "due to prepare failure")
            self._fail(group, f"{phase} phase: success criteria missed: {'; '.join(missed)}")
        elif phase == PREPARE:
            self.current = (group, DEPLOY)
            self.status[group] = DEPLOYING
        else:
            self.status[group] = SUCCEEDED
            self.current = None

    def _fail(self, group: str, reason: str) -> None:
        self.status[group] = FAILED
        self.reason[group] = reason
        if self.current is not None and self.current[0] == group:
            self.current = None

    def _log(self, group: str, phase: str, result: str, detail: str) -> None:
        self.history.append({"group": group, "phase": phase, "result": result,
                             "detail": detail})

    # -- persistence ------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        return {"strategy": {"name": self.strategy.name, **strategy_data(self.strategy)},
                "members": self.members, "nodes": self.nodes, "status": self.status,
                "reason": self.reason, "current": list(self.current) if self.current else None,
                "history": self.history}

    @classmethod
    def from_dict(cls, data: JSONObject) -> Deployment:
        raw = as_object(data["strategy"])
        members = {str(g): [str(n) for n in as_list(names)]
                   for g, names in as_object(data["members"]).items()}
        out = cls(parse_strategy(raw, str(raw.get("name", ""))), members)
        out.nodes = {str(k): str(v) for k, v in as_object(data["nodes"]).items()}
        out.status = {str(k): str(v) for k, v in as_object(data["status"]).items()}
        out.reason = {str(k): None if v is None else str(v)
                      for k, v in as_object(data["reason"]).items()}
        current = as_list(data.get("current"))
        out.current = (str(current[0]), str(current[1])) if current else None
        out.history = [{str(k): str(v) for k, v in as_object(h).items()}
                       for h in as_list(data.get("history"))]
        return out


def group_summary(group: Group, deployment: Deployment) -> str:
    """One line per group for the logs: status and how many of its nodes succeeded."""
    members = deployment.members[group.name]
    ok = sum(1 for n in members if deployment.nodes[n] == SUCCESS)
    bad = sum(1 for n in members if deployment.nodes[n] == FAILURE)
    return (f"group {group.name}: {deployment.status[group.name]}, {ok} succeeded, "
            f"{bad} failed of {len(members)}"
            + (f" ({deployment.reason[group.name]})" if deployment.reason[group.name] else ""))
