"""How actions, steps and audits are shown by the API: Airship's fields and values, with
Berth's finer ones beside them (`state` of an action, `step_state` of a step)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from common.api import API_PREFIX
from shipyard_api.actions import notes as N
from shipyard_api.actions.notes import iso
from shipyard_api.workflow.models import ActionRow, AuditRow, StepRow
from shipyard_api.workflow.states import ActionState as A
from shipyard_api.workflow.states import StepState as S

__all__ = ["action_view", "audit_view", "iso", "step_counts", "step_summary", "step_view",
           "steps_verbosity"]

# Airship's action_lifecycle (its DAG_STATE_MAPPING) and the Airflow DAG run state it
# derives from, for each of Berth's action states.
LIFECYCLE: dict[str, str] = {A.PENDING: "Pending", A.RUNNING: "Processing", A.PAUSED: "Paused",
             A.STOPPING: "Processing", A.COMPLETE: "Complete", A.FAILED: "Failed",
             A.STOPPED: "Failed"}
DAG_STATUS: dict[str, str] = {A.PENDING: "queued", A.RUNNING: "running", A.PAUSED: "paused",
              A.STOPPING: "running", A.COMPLETE: "success", A.FAILED: "failed",
              A.STOPPED: "failed"}
OPERATOR = "BerthStep"


def lifecycle(state: str) -> str:
    return LIFECYCLE.get(state, f"Unknown ({state})")


def airflow_state(state: str, failures: int) -> str | None:
    """A step's state as an Airflow task instance's: a pending step has none yet; a waiting
    step is up for retry after a failure, else rescheduled (it polls again later)."""
    if state == S.PENDING:
        return None
    if state == S.WAITING:
        return "up_for_retry" if failures else "up_for_reschedule"
    return state


def try_number(step: StepRow) -> int:
    """Airflow's try_number: failed attempts plus the current one (polling is one try)."""
    tries = [int(n["try"]) for n in step.notes or [] if isinstance(n.get("try"), int)]
    current = step.failures if step.state == S.FAILED else step.failures + 1
    return max([current, 1, *tries])


def airflow_date(ts: float | None) -> str | None:
    """Airflow's ISO dates with microseconds and offset (`2026-01-02T03:04:05.678901+00:00`)."""
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="microseconds")


def step_summary(action_id: str, sid: str, state: str, failures: int,
                 index: int) -> dict[str, object]:
    """A step as Airship lists it in an action (url, state, id, index, notes)."""
    return {"id": sid, "url": f"/actions/{action_id}/steps/{sid}", "index": index,
            "state": airflow_state(state, failures), "step_state": state, "notes": []}


def step_view(action_id: str, step: StepRow, *, full: bool = True,
              action: ActionRow | None = None,
              verbosity: int = N.MAX_VERBOSITY) -> dict[str, object]:
    duration = (step.ended_at - step.started_at) if step.started_at and step.ended_at else None
    executed = airflow_date(action.created_at) if action is not None else None
    view: dict[str, object] = {
        "id": step.step_id, "task_id": step.step_id, "name": step.name, "node": step.node,
        "index": step.position + 1, "position": step.position,
        "state": airflow_state(step.state, step.failures), "step_state": step.state,
        "start_date": airflow_date(step.started_at), "end_date": airflow_date(step.ended_at),
        "duration": duration, "try_number": try_number(step), "operator": OPERATOR,
        "dag_id": action.name if action is not None else None, "dag_run_id": action_id,
        "execution_date": executed, "logical_date": executed,
        "start": iso(step.started_at), "end": iso(step.ended_at),
        "attempts": step.attempts, "failures": step.failures, "reason": step.reason,
        "depends_on": list(step.depends_on or []),
        "next_attempt": iso(step.next_attempt_at) if step.state == S.WAITING else None,
        "notes": N.step_notes(action_id, step, verbosity),
        "url": f"{API_PREFIX}/actions/{action_id}/steps/{step.step_id}",
    }
    if full:
        view["details"] = step.details or {}
        view["output"] = step.output or {}
    return view


def audit_view(row: AuditRow) -> dict[str, object]:
    return {"id": row.id, "action_id": row.action_id, "command": row.command,
            "user": row.user, "context_marker": row.marker, "datetime": iso(row.at),
            "outcome": row.outcome}


def validation_id(row: ActionRow, index: int) -> str:
    return N.derived_ulid(row.created_at, "validation", row.id, index)


def validations_view(row: ActionRow) -> list[dict[str, object]]:
    """Each validation message with Airship's fields (id, action_id, validation_name,
    details) added to Berth's."""
    out: list[dict[str, object]] = []
    for i, msg in enumerate(row.validations or []):
        msg = msg if isinstance(msg, dict) else {"message": str(msg)}
        out.append({**msg, "id": validation_id(row, i), "action_id": row.id,
                    "validation_name": msg.get("name") or "action preflight",
                    "details": msg})
    return out


def action_view(row: ActionRow, steps: list[StepRow] | None = None,
                audit: list[AuditRow] | None = None,
                verbosity: int = N.DEFAULT_VERBOSITY) -> dict[str, object]:
    view: dict[str, object] = {
        "id": row.id, "name": row.name, "parameters": row.parameters,
        "action_lifecycle": lifecycle(row.state), "state": row.state,
        "dag_id": row.name, "dag_execution_date": airflow_date(row.created_at),
        "dag_status": DAG_STATUS.get(row.state),
        "context_marker": row.marker, "user": row.user, "datetime": iso(row.created_at),
        "timestamp": N.note_time(row.created_at),
        "started": iso(row.started_at), "ended": iso(row.ended_at),
        "revision_id": row.revision_id, "committed_rev_id": row.revision_id,
        "target_nodes": row.target_nodes, "site_wide": row.site_wide, "reason": row.reason,
        "message": row.message, "validations": validations_view(row),
        "notes": N.action_notes(row, verbosity),
    }
    if steps is not None:
        view["steps"] = [step_view(row.id, s, action=row, verbosity=steps_verbosity(verbosity))
                         for s in steps]
        view["step_counts"] = step_counts(s.state for s in steps)
    if audit is not None:
        view["command_audit"] = [audit_view(a) for a in audit]
    return view


def steps_verbosity(verbosity: int) -> int:
    """The notes of an action's steps are shown at most at MIN_VERBOSITY (as Airship: the
    step itself shows more)."""
    return min(verbosity, N.MIN_VERBOSITY)


def step_counts(states: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return counts
