"""Power-off policy of one request (a task or a reboot request): how a node is taken down.

    soft-then-hard   graceful shutdown; forced off once the grace period has passed since
                     the first graceful request (the default)
    soft-only        graceful shutdown only; the request fails once the grace period has
                     passed with the node still on (never forced)
    hard             forced off at once, no graceful attempt (only when the request asks)

The grace period is the request's `grace_period`, else the design's site-wide default
(`drydock/Region/v1` `data.power.grace_period`), else Drydock's configuration. Every request
records what it got (`outcome`): `graceful` (the node went down after the graceful shutdown),
`forced` (forced off after the grace period; `forced_after` says how long it had waited),
`hard` (forced off at once, on request), `already-off`, or `not-off` (soft-only, still on).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from common.documents import Document
from common.jsontypes import JSON, JSONObject, as_float

REGION = "drydock/Region/v1"
SOFT_THEN_HARD, SOFT_ONLY, HARD = "soft-then-hard", "soft-only", "hard"
POLICIES = (SOFT_THEN_HARD, SOFT_ONLY, HARD)
MAX_GRACE = 86400.0  # a day: anything longer is a typo, not a grace period


class Next(enum.Enum):
    """What a power-off asks next, given what it asked so far."""

    GRACEFUL = "graceful"  # ask the graceful shutdown
    FORCE = "force"  # ask ForceOff / IPMI power off
    WAIT = "wait"  # wait for the BMC to report off
    GIVE_UP = "give-up"  # soft-only: the grace period passed, the node is still on


@dataclass(frozen=True)
class PowerPolicy:
    policy: str = SOFT_THEN_HARD
    grace_period: float = 60.0
    grace_from: str = "config"  # request | design | config

    def view(self) -> JSONObject:
        return {"power_policy": self.policy, "grace_period": self.grace_period,
                "grace_period_from": self.grace_from}


def check_grace(value: object, where: str) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value <= MAX_GRACE:
        return [f"{where} must be a number of seconds from 0 to {MAX_GRACE:.0f}"]
    return []


def check(options: Mapping[str, JSON], prefix: str = "options.") -> list[str]:
    """Problems of `power_policy` and `grace_period` in a request body or task options."""
    problems = []
    policy = options.get("power_policy", SOFT_THEN_HARD)
    if policy not in POLICIES:
        problems.append(f"{prefix}power_policy must be one of {', '.join(POLICIES)}, "
                        f"not {policy!r}")
    if "grace_period" in options:
        problems += check_grace(options["grace_period"], f"{prefix}grace_period")
        if policy == HARD:
            problems.append(f"{prefix}grace_period is not used with power_policy hard "
                            "(no graceful shutdown is asked)")
    return problems


def design_grace(docs: list[Document]) -> float | None:
    """The design's site-wide default: Region `data.power.grace_period` (None when unset)."""
    for doc in docs:
        data = doc.get("data") if doc.get("schema") == REGION else None
        power = data.get("power") if isinstance(data, dict) else None
        grace = power.get("grace_period") if isinstance(power, dict) else None
        if isinstance(grace, int | float) and not check_grace(grace, "grace_period"):
            return float(grace)
    return None


def design_problems(docs: list[Document]) -> list[str]:
    """Region `power` settings that are not valid (the schema says the same on commit)."""
    problems = []
    for doc in docs:
        data = doc.get("data") if doc.get("schema") == REGION else None
        power = data.get("power") if isinstance(data, dict) else None
        if power is None:
            continue
        name = (doc.get("metadata") or {}).get("name")
        if not isinstance(power, dict):
            problems.append(f"Region {name}: power must be an object")
            continue
        problems += [f"Region {name}: power: unknown setting {k!r}" for k in power
                     if k != "grace_period"]
        if "grace_period" in power:
            problems += check_grace(power["grace_period"], f"Region {name}: power.grace_period")
    return problems


def resolve(policy: JSON, grace: JSON, design: float | None, default: float) -> PowerPolicy:
    """The policy a request gets (its inputs checked already)."""
    name = str(policy or SOFT_THEN_HARD)
    if grace is not None:
        return PowerPolicy(name, as_float(grace, default), "request")
    if design is not None:
        return PowerPolicy(name, design, "design")
    return PowerPolicy(name, default, "config")


def next_step(policy: PowerPolicy, graceful_at: float | None, forced: bool,
              now: float) -> Next:
    """The one decision every power-off makes (tasks and the reboot reconciler): the node is
    still on; `graceful_at` is when the first graceful shutdown was asked (None: not yet),
    `forced` whether a ForceOff was accepted."""
    if forced:
        return Next.WAIT
    if policy.policy == HARD:
        return Next.FORCE
    if graceful_at is None:
        return Next.GRACEFUL
    if now - graceful_at < policy.grace_period:
        return Next.WAIT
    return Next.GIVE_UP if policy.policy == SOFT_ONLY else Next.FORCE


def record(policy: PowerPolicy, outcome: str, *, forced_after: float | None = None,
           at: float | None = None) -> JSONObject:
    """What a request got, as stored and shown: the policy, the outcome and a sentence."""
    grace = f"{policy.grace_period:g} s grace period ({policy.grace_from})"
    summary = {
        "graceful": "graceful shutdown accepted: the node powered off by itself",
        "forced": "forced off after the graceful shutdown timed out" + (
            f" ({forced_after:.1f} s; {grace})" if forced_after is not None else f" ({grace})"),
        "hard": "forced off at once, no graceful shutdown (power_policy hard on request)",
        "already-off": "already off: nothing asked",
        "not-off": (f"not powered off: the graceful shutdown did not power the node off "
                    f"within the {grace}, and power_policy soft-only forbids forcing it"),
    }[outcome]
    out = {**policy.view(), "outcome": outcome, "summary": summary}
    if forced_after is not None:
        out["forced_after"] = round(forced_after, 3)
    if at is not None:
        out["at"] = at
    return out
