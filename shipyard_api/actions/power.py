"""redeploy_server's power policy: how Drydock powers the node off, and what the node got.

`power_policy` soft-then-hard (graceful shutdown, forced off once `grace_period` seconds have
passed) | soft-only (graceful only: the step fails, nothing forced, when the node stays on) |
hard (forced off at once). Without them Drydock's defaults apply (soft-then-hard, the
design's `power.grace_period`, else its configuration) and the fence of a node that is not
Ready stays hard. The destroy (and fence) step shows each power-off's outcome as Drydock
recorded it: graceful, forced after N s, hard, already off, or not off.
"""

from __future__ import annotations

from typing import Final

from common.jsontypes import JSONObject
from common.workflow import Done, Failed, Outcome, failed
from shipyard_api.actions.params import Params
from shipyard_api.workflow.definitions import ActionParameters

POLICY: Final = "power_policy"
GRACE: Final = "grace_period"
PARAMS = (POLICY, GRACE)
SOFT_THEN_HARD, SOFT_ONLY, HARD = "soft-then-hard", "soft-only", "hard"
POLICIES = (SOFT_THEN_HARD, SOFT_ONLY, HARD)
MAX_GRACE = 86400  # Drydock's bound (a day)
NOT_OFF = "GracefulShutdownTimeout"  # Drydock's reason when soft-only leaves the node on


def read(p: Params) -> ActionParameters:
    """The parameters as stored ({} when neither is given); problems go to `p`."""
    out: ActionParameters = {}
    if POLICY in p.values:
        out[POLICY] = p.choice(POLICY, POLICIES, SOFT_THEN_HARD)
    if GRACE in p.values:
        grace = _seconds(p.values[GRACE])
        if grace is None:
            p.problem(f"Parameter {GRACE} must be a number of seconds from 0 to {MAX_GRACE}, "
                      f"not {p.values[GRACE]!r}")
        else:
            out[GRACE] = grace
        if out.get(POLICY) == HARD:
            p.problem(f"Parameter {GRACE} is not used with {POLICY}=hard (no graceful "
                      "shutdown is asked)")
    return out


def _seconds(value: object) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not 0 <= value <= MAX_GRACE:
        return None
    return int(value) if float(value).is_integer() else float(value)


def options(parameters: ActionParameters) -> JSONObject:
    """Drydock task options for the stored parameters ({} keeps Drydock's defaults)."""
    out: JSONObject = {}
    if POLICY in parameters:
        out[POLICY] = parameters[POLICY]
    if GRACE in parameters:
        out[GRACE] = parameters[GRACE]
    return out


def fence_options(parameters: ActionParameters) -> JSONObject:
    """The fence's power-off: hard unless the action asks for a policy."""
    return options(parameters) if POLICY in parameters else {"force": True}


def report(task: object) -> list[JSONObject]:
    """What each power-off of a Drydock task got (its power_off messages' `power`)."""
    result = task.get("result") if isinstance(task, dict) else None
    details = result.get("details") if isinstance(result, dict) else None
    messages = details.get("messageList") if isinstance(details, dict) else None
    found: list[JSONObject] = []
    for m in messages if isinstance(messages, list) else []:
        got = m.get("power") if isinstance(m, dict) else None
        if isinstance(got, dict) and got.get("outcome"):
            found.append({"node": m.get("node"), **got})
    return found


def not_off(found: list[JSONObject]) -> JSONObject | None:
    """The power-off a soft-only policy gave up on (the node stayed on), if any."""
    return next((g for g in found if g.get("outcome") == "not-off"), None)


def with_report(outcome: Outcome) -> Outcome:
    """A Drydock task step's outcome with `details.power`: what each power-off got; a task
    that failed because soft-only left the node on fails the step with that reason."""
    if not isinstance(outcome, (Done, Failed)):
        return outcome
    found = report(outcome.details.get("task"))
    if not found:
        return outcome
    outcome.details["power"] = found
    gave_up = not_off(found)
    if isinstance(outcome, Failed) and gave_up is not None:
        return failed(NOT_OFF, f"{gave_up.get('node')}: {gave_up.get('summary')}; "
                      "nothing was forced", outcome.details)
    return outcome
