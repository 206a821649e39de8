"""How actions, steps and audits are shown by the API (Airship-like field names)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from common.api import API_PREFIX
from shipyard_api.workflow.models import ActionRow, AuditRow, StepRow
from shipyard_api.workflow.states import StepState


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def step_view(action_id: str, step: StepRow, *, full: bool = True) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": step.step_id, "name": step.name, "node": step.node, "index": step.position,
        "state": step.state, "start": iso(step.started_at), "end": iso(step.ended_at),
        "attempts": step.attempts, "failures": step.failures, "reason": step.reason,
        "depends_on": list(step.depends_on or []),
        "next_attempt": iso(step.next_attempt_at) if step.state == StepState.WAITING else None,
        "notes": [{"at": iso(n.get("at")), "message": n.get("message")}
                  for n in step.notes or []],
        "url": f"{API_PREFIX}/actions/{action_id}/steps/{step.step_id}",
    }
    if full:
        view["details"] = step.details or {}
        view["output"] = step.output or {}
    return view


def audit_view(row: AuditRow) -> dict[str, Any]:
    return {"id": row.id, "action_id": row.action_id, "command": row.command,
            "user": row.user, "context_marker": row.marker, "datetime": iso(row.at),
            "outcome": row.outcome}


def action_view(row: ActionRow, steps: list[StepRow] | None = None,
                audit: list[AuditRow] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row.id, "name": row.name, "parameters": row.parameters,
        "action_lifecycle": row.state.capitalize(), "state": row.state,
        "context_marker": row.marker, "user": row.user, "datetime": iso(row.created_at),
        "started": iso(row.started_at), "ended": iso(row.ended_at),
        "revision_id": row.revision_id, "target_nodes": row.target_nodes,
        "site_wide": row.site_wide, "reason": row.reason, "message": row.message,
        "validations": row.validations or [],
    }
    if steps is not None:
        view["steps"] = [step_view(row.id, s) for s in steps]
        counts: dict[str, int] = {}
        for s in steps:
            counts[s.state] = counts.get(s.state, 0) + 1
        view["step_counts"] = counts
    if audit is not None:
        view["command_audit"] = [audit_view(a) for a in audit]
    return view
