"""Audit entries of actions and their steps (stream `shipyard.actions`), written in the
transaction of the change they record (common.audit)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from common import audit

STREAM = "shipyard.actions"
SERVICE = "shipyard"


def action_changed(s: Session, action_id: str, old: str | None, new: str, at: float,
                   **detail: object) -> None:
    """An action's state went from `old` (None: it was created) to `new`."""
    audit.append(s, STREAM, f"action/{action_id}", "created" if old is None else "state",
                 old, new, at=at, detail={k: v for k, v in detail.items() if v is not None})


def step_changed(s: Session, action_id: str, step_id: str, old: str, new: str, at: float,
                 **detail: object) -> None:
    """A step of an action went from `old` to `new`."""
    audit.append(s, STREAM, f"action/{action_id}/step/{step_id}", "state", old, new, at=at,
                 detail={k: v for k, v in detail.items() if v is not None})
