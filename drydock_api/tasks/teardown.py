"""A node's teardown as it stands across tasks (kept in its node record): the destroy steps
done and by which task, the disks attested erased, and where and why it stopped.

A teardown begins with the first destroy_nodes task that reaches the node after it was last
deployed or after its previous teardown completed. A task of the same teardown that comes
later (a re-run after a failure or a takeover) takes over what an earlier one did: the steps
in `RESUMED` are not run again. A disk attested erased is not erased again by any teardown
until a deploy is requested for the node (the disks are written again), which ends the
record.

    {"id": <first task>, "state": "in_progress" | "partial" | "complete", "task": <last task>,
     "last_step": <last step done>, "cause": <why it stopped> | None, "started": ts, "at": ts,
     "options": {...}, "steps": {step: {"task", "at", "output"}},
     "erased": {disk: {"drive", "method", "bmc_task", "task", "at", "message"}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IN_PROGRESS, PARTIAL, COMPLETE = "in_progress", "partial", "complete"
# Steps whose completion by an earlier task of the same teardown stands: planning again (the
# machine may have left MAAS since) or releasing again (a second erase) would be wrong.
RESUMED = ("plan_wipe", "release")
WIPE_OPTIONS = ("preserve_local_storage", "erase", "os_disk_erase")
Record = dict[str, Any]


def begin(record: Mapping[str, Any] | None, task: str, options: Mapping[str, Any],
          now: float) -> Record:
    """The teardown `task` works on: the node's current one, or a new one."""
    if record and record.get("id") and record.get("state") != COMPLETE:
        out = dict(record)
    else:  # the disks erased since the last deploy stay erased
        out = {"id": task, "started": now, "steps": {}, "last_step": None,
               "erased": dict((record or {}).get("erased") or {})}
    out.update(state=IN_PROGRESS, task=task, cause=None, at=now,
               options=_comparable(options))
    return out


def earlier_steps(record: Mapping[str, Any] | None, task: str,
                  options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Steps of `RESUMED` that an earlier task of this teardown completed, with the same
    options (other options plan another teardown: those steps run again)."""
    if not record or record.get("state") == COMPLETE or \
            dict(record.get("options") or {}) != _comparable(options):
        return {}
    steps = record.get("steps") or {}
    return {name: dict(steps[name]) for name in RESUMED
            if name in steps and steps[name].get("task") != task}


def _comparable(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that decide how disks are wiped (not which nodes, nor retirement)."""
    return {k: v for k, v in options.items() if k in WIPE_OPTIONS}


def earlier_erases(record: Mapping[str, Any] | None, task: str) -> dict[str, dict[str, Any]]:
    """Disks an earlier task of this teardown attested erased: disk → attestation."""
    erased = (record or {}).get("erased") or {}
    return {disk: dict(e) for disk, e in erased.items() if e.get("task") != task}


def attest(record: Mapping[str, Any] | None, task: str,
           attested: Mapping[str, Mapping[str, Any]]) -> Record | None:
    """The record with these disks attested erased by `task` (first attestation kept)."""
    if record is None:
        return None
    erased = dict(record.get("erased") or {})
    for disk, entry in attested.items():
        erased.setdefault(disk, {**entry, "task": entry.get("task") or task})
    return {**record, "erased": erased}


def step_done(record: Mapping[str, Any] | None, task: str, step: str, output: Any,
              now: float) -> Record | None:
    if record is None:
        return None
    steps = dict(record.get("steps") or {})
    steps[step] = {"task": task, "at": now, "output": output}
    return {**record, "steps": steps, "last_step": step, "at": now}


def stopped(record: Mapping[str, Any] | None, task: str, cause: str,
            now: float) -> Record | None:
    """The task ended for the node before its teardown was complete."""
    if record is None:
        return None
    return {**record, "state": PARTIAL, "task": task, "cause": cause, "at": now}


def completed(record: Mapping[str, Any] | None, task: str, now: float) -> Record | None:
    if record is None:
        return None
    return {**record, "state": COMPLETE, "task": task, "cause": None, "at": now}

