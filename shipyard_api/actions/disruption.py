"""redeploy_server's leave to disrupt named PodDisruptionBudgets: its parameters, who gave it,
what Promenade is asked, and what the drain deleted past them or what still blocks it.

`disrupt-pdbs: [{namespace, name}]` with `disrupt-after: seconds` (common/disruption.py checks
both, every problem listed) lets the decommission's drain delete (not evict) the pods of those
budgets on the node once a budget has refused their eviction for that long and refuses again;
no other budget and no eviction lock is bypassed. Asking for it needs the rule
shipyard:action_disrupt_pdbs besides the action's own; the action records the authenticated
user who asked (`disrupt-pdbs-allowed-by`), and Shipyard passes that user on to Promenade.
"""

from __future__ import annotations

from collections.abc import Mapping

from common import disruption
from shipyard_api.actions.params import Params, canonical
from shipyard_api.workflow.definitions import ActionParameters

PARAMS = (disruption.PDBS, disruption.AFTER)
RULE = "shipyard:action_disrupt_pdbs"
ALLOWED_BY = "disrupt-pdbs-allowed-by"


def requested(parameters: object) -> bool:
    """Whether raw action parameters ask for a leave to disrupt (the policy rule applies)."""
    return isinstance(parameters, Mapping) and any(
        isinstance(k, str) and canonical(k) in PARAMS for k in parameters)


def read(p: Params) -> ActionParameters:
    """The two parameters as stored ({} when not given); problems go to `p`."""
    budgets, problems = disruption.from_wire(p.values.get(disruption.PDBS))
    if disruption.PDBS in p.values and budgets is None:
        budgets = []  # given as null
    leave, more = disruption.check_leave(budgets, p.values.get(disruption.AFTER),
                                         p.values.get(disruption.AFTER) is not None)
    if problems and not budgets:  # not a list: "at least one" would say it twice
        more = [m for m in more if "at least one" not in m]
    for message in problems + more:
        p.problem(message)
    if leave is None:
        return {}
    return {"disrupt-pdbs": leave.wire(), "disrupt-after": leave.after}  # PDBS, AFTER


def allowed_by(parameters: ActionParameters, user: str | None) -> ActionParameters:
    """The parameters to store: with the user who gave the leave, when there is one."""
    if "disrupt-pdbs" not in parameters:
        return parameters.copy()
    return {**parameters, "disrupt-pdbs-allowed-by": user}  # ALLOWED_BY


def query(parameters: ActionParameters) -> dict[str, str] | None:
    """Promenade's decommission query parameters for the stored leave (None: no leave)."""
    pdbs = parameters.get("disrupt-pdbs")
    if not pdbs:
        return None
    keys = tuple(f"{b['namespace']}/{b['name']}" for b in pdbs)
    return disruption.to_query(disruption.Leave(keys, int(parameters["disrupt-after"])))


def plan_finding(text: str, parameters: ActionParameters) -> str | None:
    """A plan's blocker that the leave lifts (a named budget allowing no disruption), as the
    warning it becomes; None for any other blocker (locks and unnamed budgets stay)."""
    for entry in parameters.get("disrupt-pdbs") or []:
        key = f"{entry['namespace']}/{entry['name']}"
        if text.startswith(f"PodDisruptionBudget {key} allows 0 disruptions"):
            return (f"{text}; disrupt-pdbs names it: if it still refuses "
                    f"{parameters['disrupt-after']} s after its first refusal, those pods are "
                    "deleted, not evicted")
    return None


def step_details(body: object) -> dict[str, list[object]]:
    """From Promenade's decommission answer (or failure): the pods deleted past a named budget
    (pod, budget, node, at, allowed_by) and what blocked the drain (budgets and locks)."""
    details = body.get("details") if isinstance(body, Mapping) else None
    messages = details.get("messageList") if isinstance(details, Mapping) else None
    disrupted: list[object] = []
    blockers: list[object] = []
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, Mapping):
            continue
        report = m.get("report")
        if isinstance(report, Mapping) and isinstance(report.get("disrupted"), list):
            disrupted += [d for d in report["disrupted"] if d not in disrupted]
        if isinstance(m.get("blocker"), Mapping):
            blockers.append(m["blocker"])
        if m.get("allowed_by") and m.get("budget") and m.get("pod"):
            entry = {k: m.get(k) for k in ("pod", "budget", "node", "at", "allowed_by",
                                           "disruptions_allowed")}
            if entry not in disrupted:
                disrupted.append(entry)
    out: dict[str, list[object]] = {}
    if disrupted:
        out["disrupted"] = disrupted
    if blockers:
        out["blockers"] = blockers
    return out
