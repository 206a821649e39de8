"""Notes on actions and steps as Airship's note objects, with ids derived from their content."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Sequence

from common.errors import BadRequest
from shipyard_api.workflow.models import ActionRow, StepRow

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MIN_VERBOSITY, MAX_VERBOSITY = 1, 5
DEFAULT_VERBOSITY = MIN_VERBOSITY
ACTION_SUBTYPE = "action metadata"
STEP_SUBTYPE = "step metadata"


def derived_ulid(at: float, *parts: object) -> str:
    """A ULID whose time is `at` and whose random part hashes `parts`: the same note always
    gets the same id, and the id's time says when to look for it."""
    ms = max(0, int(at * 1000)) & ((1 << 48) - 1)
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    value = (ms << 80) | int.from_bytes(digest[:10], "big")
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def ulid_time(value: str) -> float | None:
    """The time (seconds) a 26-character ULID carries; None when it is not one."""
    if len(value) != 26:
        return None
    number = 0
    for ch in value.upper():
        idx = CROCKFORD.find(ch)
        if idx < 0:
            return None
        number = number * 32 + idx
    if number >= 1 << 128:
        return None
    return (number >> 80) / 1000.0


def note_time(ts: float | None) -> str | None:
    """Airship's note_timestamp text: `YYYY-MM-DD HH:MM:SS.ffffff` (UTC)."""
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).replace(tzinfo=None).isoformat(" ")


def parse_verbosity(raw: str | None) -> int:
    """Airship's `verbosity` query parameter: 0 (no notes) to 5; 400 otherwise."""
    if raw is None or raw == "":
        return DEFAULT_VERBOSITY
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_VERBOSITY:
        raise BadRequest(f"verbosity must be an integer from 0 to {MAX_VERBOSITY}, not {raw!r}",
                         reason="InvalidVerbosity")
    return value


def _note(assoc_id: str, subject: str, sub_type: str, value: str, at: float | None,
          has_details: bool, extra: dict[str, object]) -> dict[str, object]:
    note_id = derived_ulid(at or 0.0, assoc_id, at, value)
    return {"assoc_id": assoc_id, "subject": subject, "sub_type": sub_type, "note_val": value,
            "verbosity": MIN_VERBOSITY, "note_id": note_id, "note_timestamp": note_time(at),
            "resolved_url_value": f"Details at notedetails/{note_id}" if has_details else None,
            **extra}


def action_notes(row: ActionRow, verbosity: int = DEFAULT_VERBOSITY) -> list[dict[str, object]]:
    """The action's own notes: the design revision it uses, as Airship notes it at creation."""
    if verbosity < MIN_VERBOSITY:
        return []
    revision = row.revision_id if row.revision_id is not None else "none (nothing committed)"
    return [_note(f"action/{row.id}", row.id, ACTION_SUBTYPE, f"Configdoc revision {revision}",
                  row.created_at, False, {})]


def step_notes(action_id: str, step: StepRow,
               verbosity: int = DEFAULT_VERBOSITY) -> list[dict[str, object]]:
    """A step's notes (its log lines), oldest first; each keeps Berth's `at`, `message` and
    `try`. A note has details (at /notedetails) when its step recorded details."""
    if verbosity < MIN_VERBOSITY:
        return []
    has_details = bool(step.details)
    return [_note(f"step/{action_id}/{step.step_id}", step.step_id, STEP_SUBTYPE,
                  str(n.get("message") or ""), n.get("at"), has_details,
                  {"at": iso(n.get("at")), "message": n.get("message"), "try": n.get("try")})
            for n in step.notes or []]


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def find_note(note_id: str, alive_at: Callable[[float], Sequence[str]],
              load: Callable[[str], tuple[ActionRow, Iterable[StepRow]]],
              ) -> tuple[dict[str, object], ActionRow, StepRow | None] | None:
    """The note with `note_id`, its action and (for a step note) its step: only actions
    alive at the time the id carries can hold it."""
    at = ulid_time(note_id)
    if at is None:
        return None
    for action_id in alive_at(at):
        row, steps = load(action_id)
        for note in action_notes(row):
            if note["note_id"] == note_id.upper():
                return note, row, None
        for step in steps:
            for note in step_notes(row.id, step):
                if note["note_id"] == note_id.upper():
                    return note, row, step
    return None
