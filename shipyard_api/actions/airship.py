"""What Airship's clients read besides actions: step logs, validations, note details and
workflows (Berth's action runs in the shape of Airflow DAG runs)."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable

from common.errors import BadRequest, NotFound
from shipyard_api.actions import notes as N
from shipyard_api.actions.views import (
    DAG_STATUS,
    airflow_date,
    step_view,
    try_number,
    validations_view,
)
from shipyard_api.workflow.models import ActionRow, StepNote, StepRow
from shipyard_api.workflow.store import ActionStore

WORKFLOW_WINDOW = 30 * 86400.0  # GET /workflows without `since`: the last 30 days
NOTE_RULES = {"action": "shipyard:get_action", "step": "shipyard:get_action_step"}


def positive_int(raw: str | None, name: str) -> int | None:
    """An optional query parameter that must be an integer of at least 1 (400 otherwise)."""
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise BadRequest(f"{name} must be an integer of at least 1, not {raw!r}",
                         reason="InvalidParameter")
    return value


def log_line(step: StepRow, note: StepNote) -> str:
    at = note.get("at")
    stamp = N.iso(at) if isinstance(at, int | float) else "-"
    return f"[{stamp}] {step.step_id} try {note.get('try') or '-'}: {note.get('message')}"


def _find_step(store: ActionStore, action_id: str, sid: str) -> tuple[ActionRow, StepRow]:
    row = store.get(action_id)
    for step in store.steps(action_id):
        if step.step_id == sid:
            return row, step
    raise NotFound(f"Action {action_id} has no step {sid}", reason="StepNotFound")


def step_log(store: ActionStore, action_id: str, sid: str, try_raw: str | None,
             tail_raw: str | None) -> str:
    """The step's log lines (its notes) of one try: `try` (default the last, as Airship
    shows), the last `tail` lines when given. 400 on a bad value, 404 on an unknown action,
    step or try."""
    wanted, tail = positive_int(try_raw, "try"), positive_int(tail_raw, "tail")
    _, step = _find_step(store, action_id, sid)
    last = try_number(step)
    if wanted is not None and wanted > last:
        raise NotFound(f"Step {sid} of action {action_id} has no try {wanted} (its last is "
                       f"{last})", reason="StepTryNotFound")
    chosen = wanted or last
    lines = [log_line(step, n) for n in step.notes or []
             if n.get("try") == chosen or (n.get("try") is None and wanted is None)]
    if tail is not None:
        lines = lines[-tail:]
    return "".join(f"{line}\n" for line in lines)


def validation(store: ActionStore, action_id: str, validation_id: str) -> dict[str, object]:
    row = store.get(action_id)
    for found in validations_view(row):
        if found["id"] == validation_id.upper():
            return found
    raise NotFound(f"Action {action_id} has no validation {validation_id}",
                   reason="ValidationNotFound")


def note_details(store: ActionStore, note_id: str,
                 allowed: Callable[[str], None]) -> tuple[str, dict[str, object]]:
    """The note's details (the step's recorded details), after `allowed` checked the rule of
    the note's action or step. 400 when `note_id` is not a ULID, 404 when there is no such
    note or it has no details."""
    if N.ulid_time(note_id) is None:
        raise BadRequest(f"Note ids are 26-character ULIDs, not {note_id!r}",
                         reason="InvalidNoteId")

    def load(action_id: str) -> tuple[ActionRow, list[StepRow]]:
        row, steps, _ = store.with_details(action_id)
        return row, steps

    found = N.find_note(note_id, store.alive_at, load)
    if found is None:
        raise NotFound(f"Note {note_id} is not found", reason="NoteNotFound")
    note, row, step = found
    allowed(NOTE_RULES["step" if step is not None else "action"])
    if step is None or not step.details:
        raise NotFound(f"Note {note_id} has no further details", reason="NoNoteDetails")
    return str(note["note_id"]), {"action_id": row.id, "step_id": step.step_id,
                             "step_state": step.state, "details": step.details}


def _workflow_id(row: ActionRow) -> str:
    stamp = dt.datetime.fromtimestamp(row.created_at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return f"{row.name}__{stamp}"


def workflow_entry(row: ActionRow) -> dict[str, object]:
    """An action run as Airship lists a DAG run."""
    executed = airflow_date(row.created_at)
    return {"workflow_id": _workflow_id(row), "dag_id": row.name, "id": row.id,
            "run_id": row.id, "dag_run_id": row.id, "execution_date": executed,
            "logical_date": executed, "start_date": airflow_date(row.started_at),
            "end_date": airflow_date(row.ended_at),
            "state": DAG_STATUS.get(row.state),
            "external_trigger": True,
            "conf": {"action": {"id": row.id, "name": row.name,
                                "parameters": row.parameters}},
            "action_id": row.id, "action_state": row.state}


def parse_since(raw: str | None, now: float) -> float:
    """`since` as an ISO 8601 date or time (UTC when it names no zone); default 30 days."""
    if raw is None or raw == "":
        return now - WORKFLOW_WINDOW
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"since must be an ISO 8601 date or time, not {raw!r}",
                         reason="InvalidParameter") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def workflows(store: ActionStore, since_raw: str | None,
              clock: Callable[[], float] = time.time) -> list[dict[str, object]]:
    return [workflow_entry(r) for r in store.created_between(parse_since(since_raw, clock()))]


def workflow(store: ActionStore, workflow_id: str) -> dict[str, object]:
    """One workflow (`{dag_id}__{execution date}`) with its steps; 400 when the id lacks
    the separator, 404 when no action run matches."""
    if "__" not in workflow_id:
        raise BadRequest("Workflow id must use {dag id}__{execution date} format",
                         reason="InvalidWorkflowId")
    name, stamp = workflow_id.rsplit("__", 1)
    try:
        when = dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        raise BadRequest(f"The execution date {stamp!r} of workflow id {workflow_id!r} is "
                         "not an ISO 8601 time", reason="InvalidWorkflowId") from None
    for row in store.created_between(when - 1.0, when + 1.0, name=name):
        if _workflow_id(row) == workflow_id:
            _, steps, _ = store.with_details(row.id)
            entry = workflow_entry(row)
            entry["steps"] = [step_view(row.id, s, action=row, full=False,
                                        verbosity=0) for s in steps]
            entry["sub_dags"] = []
            return entry
    raise NotFound(f"A workflow with id {workflow_id} was not found",
                   reason="WorkflowNotFound")


def details_text(details: dict[str, object]) -> str:
    return json.dumps(details, ensure_ascii=False, indent=2, sort_keys=True)
