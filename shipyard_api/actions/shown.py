"""GET /actions/{id}'s body, encoded again only where the action changed.

A running action changes one step at a time (its progress, then its end and the next one's
start), while its view holds every step with its notes and Drydock's task tree: ~70 KB at the
end of a redeploy. Each step's part is kept encoded under its row as stored; a new version
parses and encodes only the steps whose rows changed, and the action's own fields."""

from __future__ import annotations

import json
from collections.abc import Sequence

from shipyard_api.actions import notes as N
from shipyard_api.actions.views import (
    action_view,
    audit_view,
    step_counts,
    step_view,
    steps_verbosity,
)
from shipyard_api.workflow.models import ActionRow, AuditRow, StepRow
from shipyard_api.workflow.store import STEP_SHOWN, STEP_SHOWN_JSON

SHOWN_FIELDS = tuple(c.key for c in STEP_SHOWN) + STEP_SHOWN_JSON
VERBOSITY = steps_verbosity(N.DEFAULT_VERBOSITY)
STATE = SHOWN_FIELDS.index("state")


class ShownAction:
    """One action's view as JSON text, from `ActionStore.shown_rows`; equal to
    `json.dumps(action_view(*store.with_details(id)), ensure_ascii=False)`."""

    def __init__(self) -> None:
        self._steps: dict[str, tuple[tuple[object, ...], str]] = {}
        self.encoded = 0  # steps encoded (not taken as kept): for tests
        self.size = 0  # characters kept: the steps' raw text and encoded parts

    def encode(self, row: ActionRow, steps: Sequence[tuple[object, ...]],
               audit: Sequence[AuditRow]) -> str:
        kept, parts = self._steps, []
        fresh: dict[str, tuple[tuple[object, ...], str]] = {}
        for raw in steps:
            sid = str(raw[0])
            hit = kept.get(sid)
            if hit is None or hit[0] != raw:
                hit = (raw, self._step(row, raw))
            fresh[sid] = hit
            parts.append(hit[1])
        self._steps = fresh  # one assignment: a concurrent encode sees the old or the new
        self.size = sum(len(part) + sum(len(v) for v in raw if isinstance(v, str))
                        for raw, part in fresh.values())
        head = _dumps(action_view(row))
        tail = _dumps({"step_counts": step_counts(str(r[STATE]) for r in steps),
                       "command_audit": [audit_view(a) for a in audit]})
        return f'{head[:-1]}, "steps": [{", ".join(parts)}], {tail[1:]}'

    def _step(self, row: ActionRow, raw: tuple[object, ...]) -> str:
        self.encoded += 1
        fields = dict(zip(SHOWN_FIELDS, raw, strict=True))
        for name in STEP_SHOWN_JSON:
            text = fields[name]
            fields[name] = None if text is None else json.loads(str(text))
        step = StepRow(action_id=row.id, **fields)
        return _dumps(step_view(row.id, step, action=row, verbosity=VERBOSITY))


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
