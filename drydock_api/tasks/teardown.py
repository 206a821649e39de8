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

from common.jsontypes import JSON, JSONObject, as_object

IN_PROGRESS, PARTIAL, COMPLETE = "in_progress", "partial", "complete"
# Steps whose completion by an earlier task of the same teardown stands: planning again (the
# machine may have left MAAS since) or releasing again (a second erase) would be wrong.
RESUMED = ("plan_wipe", "release")
WIPE_OPTIONS = ("preserve_local_storage", "erase", "os_disk_erase")
Record = JSONObject  # a node's teardown as its node record keeps it
Seen = Mapping[str, JSON] | None  # a teardown as read


def begin(record: Seen, task: str, options: Mapping[str, JSON], now: float) -> Record:
    """The teardown `task` works on: the node's current one, or a new one."""
    if record and record.get("id") and record.get("state") != COMPLETE:
        out = dict(record)
    else:  # the disks erased since the last deploy stay erased
        out = {"id": task, "started": now, "steps": {}, "last_step": None,
               "erased": {**as_object((record or {}).get("erased"))}}
    out.update(state=IN_PROGRESS, task=task, cause=None, at=now,
               options=_comparable(options))
    return out


def earlier_steps(record: Seen, task: str,
                  options: Mapping[str, JSON]) -> dict[str, JSONObject]:
    """Steps of `RESUMED` that an earlier task of this teardown completed, with the same
    options (other options plan another teardown: those steps run again)."""
    if not record or record.get("state") == COMPLETE or \
            as_object(record.get("options")) != _comparable(options):
        return {}
    steps = as_object(record.get("steps"))
    return {name: {**as_object(steps[name])} for name in RESUMED
            if name in steps and as_object(steps[name]).get("task") != task}


def _comparable(options: Mapping[str, JSON]) -> JSONObject:
    """The options that decide how disks are wiped (not which nodes, nor retirement)."""
    return {k: v for k, v in options.items() if k in WIPE_OPTIONS}


def earlier_erases(record: Seen, task: str) -> dict[str, JSONObject]:
    """Disks an earlier task of this teardown attested erased: disk → attestation."""
    erased = as_object((record or {}).get("erased"))
    return {disk: {**as_object(e)} for disk, e in erased.items()
            if as_object(e).get("task") != task}


def attest(record: Seen, task: str, attested: Mapping[str, Mapping[str, JSON]]) -> Record | None:
    """The record with these disks attested erased by `task` (first attestation kept)."""
    if record is None:
        return None
    erased = {**as_object(record.get("erased"))}
    for disk, entry in attested.items():
        erased.setdefault(disk, {**entry, "task": entry.get("task") or task})
    return {**record, "erased": erased}


def step_done(record: Seen, task: str, step: str, output: JSON, now: float) -> Record | None:
    if record is None:
        return None
    steps = {**as_object(record.get("steps"))}
    steps[step] = {"task": task, "at": now, "output": output}
    return {**record, "steps": steps, "last_step": step, "at": now}


def stopped(record: Seen, task: str, cause: str,
            now: float) -> Record | None:
    """The task ended for the node before its teardown was complete."""
    if record is None:
        return None
    return {**record, "state": PARTIAL, "task": task, "cause": cause, "at": now}


def completed(record: Seen, task: str, now: float) -> Record | None:
    if record is None:
        return None
    return {**record, "state": COMPLETE, "task": task, "cause": None, "at": now}

