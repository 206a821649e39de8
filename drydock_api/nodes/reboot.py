"""The reboot reconciler (spec 004): drives each node with reboot requests, one step per pass.

Per node, with `pending` = pending_reboot_since and `last` = last_powered_on:
- requests exist, the node is on, and pending is empty or earlier than last → pending = now;
- while pending is later than last, the node is powered off by the requests' power policy
  (nodes.power: hard if any request is hard, else soft-then-hard if any is, else soft-only;
  the shortest grace period a request gives, else the design's, else `soft_timeout`),
  whatever the node's desired power state; what the power-off got is recorded on each
  request and on the node (`last_power_off`); a soft-only power-off that times out fails
  its requests (kept, marked `not-off`, not retried) and ends the pending reboot;
- whenever the node is off and last < pending, the unkeyed request is removed (also one posted
  while keyed requests hold the node off); when no request remains and the node should be on
  (not torn down), it is powered on, and last = the time it was seen on again.
A pass that cannot act records why in the node row (`reboot_error`, shown in node views).
Phases (`Phase`, changed only through the TRANSITIONS table) are kept in the node row, so any
replica can continue; a node lease makes exactly one replica act on a node. Nodes in an active
prepare/deploy/destroy task are left alone until the task ends. A retired node is never acted
on (spec 003): its requests wait, marked `skipped: node retired`, until it is unretired.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from common.audit import current_actor, worker_actor
from common.context import RequestContext
from common.errors import BerthError
from common.failurelog import FailureLog
from common.jsontypes import JSON, as_float
from common.workflow import IllegalTransition, transition
from drydock_api.budgets.slots import Claim, SlotStore
from drydock_api.db.models import NodeRecord, RebootRow
from drydock_api.db.nodes import NodeStore
from drydock_api.drivers.ports import BmcAccess, PowerInterface
from drydock_api.nodes.design import Design
from drydock_api.nodes.power import (
    HARD,
    SOFT_ONLY,
    SOFT_THEN_HARD,
    Next,
    PowerPolicy,
    next_step,
)
from drydock_api.nodes.power import record as power_record

LOG = logging.getLogger(__name__)


class Phase(enum.StrEnum):
    """Where a pending reboot stands (`shutdown_mode` of the node row; IDLE is stored NULL)."""

    IDLE = "idle"
    SOFT = "soft"  # graceful shutdown requested
    HARD = "hard"  # forced off requested
    OFF = "off"  # seen off: held while keyed requests remain
    ON = "on"  # power on requested


TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.SOFT, Phase.HARD, Phase.OFF}),
    Phase.SOFT: frozenset({Phase.HARD, Phase.OFF, Phase.IDLE}),  # IDLE: soft-only gave up
    Phase.HARD: frozenset({Phase.OFF}),
    Phase.OFF: frozenset({Phase.ON, Phase.IDLE}),
    Phase.ON: frozenset({Phase.ON, Phase.IDLE}),
}


def enter(current: Phase, target: Phase, values: dict[str, object], now: float) -> Phase:
    """Record a phase change allowed by TRANSITIONS (anything else is a bug)."""
    transition(TRANSITIONS, current, target, "A reboot phase")
    values.update(shutdown_mode=None if target == Phase.IDLE else target.value,
                  shutdown_started=None if target == Phase.IDLE else now)
    return target


@dataclass(frozen=True)
class RebootSettings:
    interval: float = 2.0
    lease_seconds: float = 30.0
    soft_timeout: float = 60.0
    power_on_retry: float = 30.0


class RebootReconciler:
    def __init__(self, nodes: NodeStore, power: PowerInterface,
                 designs: Callable[[JSON, RequestContext], Design],
                 latest_ref: Callable[[], JSON], settings: RebootSettings, owner: str,
                 clock: Callable[[], float]) -> None:
        self._nodes = nodes
        self._power = power
        self._designs = designs
        self._latest_ref = latest_ref
        self.settings = settings
        self.owner = owner
        self._clock = clock
        self.stopping = threading.Event()
        self._grace: float | None = None  # the design's power.grace_period (last read)
        # failure-domain slots: a reboot holds drydock:reboot:<node> from before its power-off
        # until the node is on again (claims_of: node, design ref, ctx -> the domains)
        self.slots: SlotStore | None = None
        self.claims_of: Callable[[str, JSON, RequestContext | None], list[Claim]] | None = None

    def pass_once(self) -> int:
        """One step on every node that needs one; returns how many nodes were acted on."""
        acted = 0
        for name in self._nodes.to_reconcile():
            if self._nodes.busy(name):
                continue
            if not self._nodes.claim(name, self.owner, self.settings.lease_seconds):
                continue
            asked = sorted({r.created_by for r in self._nodes.reboots(name) if r.created_by})
            current_actor.set(worker_actor("drydock", ", ".join(asked) or None))
            try:
                done = self.step(name)
                acted += 1
            except IllegalTransition as exc:
                LOG.error("Reboot of %s: %s", name, exc.message)
                continue
            except BerthError as exc:
                LOG.warning("Reboot of %s: %s (retrying next pass)", name, exc.message)
                self._nodes.update(name, reboot_error=f"{exc.message} (retrying)")
                continue
            if done:
                self._nodes.release(name, self.owner)
        return acted

    def _bmc(self, record: NodeRecord) -> tuple[BmcAccess | None, str]:
        """The node's BMC, or None and why not (the design's grace period in `_grace`)."""
        ref = record.design_ref or self._latest_ref()
        if not ref:
            why = getattr(self._latest_ref, "error", None)
            return None, ("no site design is known (no design_ref given, no committed "
                          "revision in Shipyard, no task run)" + (f": {why}" if why else ""))
        design = self._designs(ref, RequestContext())
        self._grace = design.power_grace
        node = design.nodes.get(record.name)
        if node is None:
            return None, f"{record.name} is not a node of the design {ref}"
        if node.bmc is None:
            return None, f"{record.name} has no usable oob address and credentials in the design"
        return node.bmc, ""

    def step(self, name: str) -> bool:
        """Advance one node by one step; True when it has nothing left to do."""
        record = self._nodes.get(name)
        if record is None:
            return True
        if record.retired:
            return self._skip_retired(record)
        bmc, why = self._bmc(record)
        if bmc is None:
            LOG.warning("Reboot of %s cannot act: %s", name, why)
            if record.reboot_error != why:
                self._nodes.update(name, reboot_error=why)
            return False
        power = self._power.power_state(bmc)
        now = self._clock()
        requests = active(self._nodes.reboots(name))
        values: dict[str, object] = {"power_state": power}
        pending, last = record.pending_reboot_since, record.last_powered_on
        rebooting = pending is not None and (last is None or pending > last)
        if requests and power == "on" and not rebooting:
            pending, rebooting = now, True
            values.update(pending_reboot_since=now, shutdown_mode=None, shutdown_started=None)
            record.shutdown_mode = None
        if not rebooting:
            if requests:
                values["reboot_error"] = None
            self._nodes.update(name, **values)
            return not requests
        values["reboot_error"] = None
        waiting = self._hold_slot(record, power)
        if waiting:
            values["reboot_error"] = waiting
            self._nodes.update(name, **values)
            return False
        done = self._advance(name, record, bmc, power, now, requests, values)
        self._nodes.update(name, **values)
        return done

    def _hold_slot(self, record: NodeRecord, power: str) -> str | None:
        """Take (or renew) the node's failure-domain slots before its power-off; why the
        reboot waits when a domain is full and the node is still in service, else None."""
        if self.slots is None or self.claims_of is None:
            return None
        ref = record.design_ref or self._latest_ref()
        claims = self.claims_of(record.name, ref, RequestContext())
        blockers = self.slots.take(reboot_holder(record.name), record.name, claims,
                                   self.settings.lease_seconds * 2, "reboot request")
        if not blockers:
            return None
        text = "; ".join(b.sentence() for b in blockers)
        if Phase(record.shutdown_mode or Phase.IDLE.value) == Phase.IDLE and power == "on":
            LOG.info("Reboot of %s waits for a failure-domain slot: %s", record.name, text)
            return f"waiting for a failure-domain slot: {text}"
        LOG.warning("Reboot of %s: its slots lapsed and are taken now: %s", record.name, text)
        return None  # out of service already: finish the reboot

    def _release_slot(self, name: str) -> None:
        if self.slots is not None:
            self.slots.release(reboot_holder(name))

    def _advance(self, name: str, record: NodeRecord, bmc: BmcAccess, power: str,
                 now: float, requests: list[RebootRow], values: dict[str, object]) -> bool:
        phase = Phase(record.shutdown_mode or Phase.IDLE.value)
        started = record.shutdown_started or now
        if phase == Phase.ON and power == "on":
            return self._powered_on(name, phase, now, values) and not requests
        shutting = phase in (Phase.IDLE, Phase.SOFT, Phase.HARD)
        if shutting and power != "off":
            self._shut_down(name, bmc, phase, started, now, requests, values)
            return False
        if shutting:
            self._got(name, record, phase, now, requests, values)
            phase = enter(phase, Phase.OFF, values, now)
        if not record.torn_down:  # off, and last < pending: the unkeyed request has acted
            self._nodes.delete_reboot(name, "")
        if active(self._nodes.reboots(name)) or record.torn_down:
            return False  # held off until every keyed request is released
        if power == "on":
            return self._powered_on(name, phase, now, values)
        if phase == Phase.OFF or now - started >= self.settings.power_on_retry:
            self._power.power_on(bmc)
            enter(phase, Phase.ON, values, now)
        return False

    def policy(self, requests: list[RebootRow]) -> PowerPolicy:
        """The requests' combined policy: hard wins, then soft-then-hard, then soft-only; the
        shortest grace period a request gives, else the design's, else [reboot] soft_timeout."""
        names = {policy_of(r) for r in requests}
        name = next((p for p in (HARD, SOFT_THEN_HARD) if p in names), SOFT_ONLY)
        graces = [r.grace_period for r in requests if r.grace_period is not None]
        if graces:
            return PowerPolicy(name, min(graces), "request")
        if self._grace is not None:
            return PowerPolicy(name, self._grace, "design")
        return PowerPolicy(name, self.settings.soft_timeout, "config")

    def _shut_down(self, name: str, bmc: BmcAccess, phase: Phase, started: float,
                   now: float, requests: list[RebootRow], values: dict[str, object]) -> None:
        """One step of the power-off (nodes.power.next_step, as tasks take it)."""
        policy = self.policy(requests)
        step = next_step(policy, started if phase == Phase.SOFT else None,
                         phase == Phase.HARD, now)
        progress = {**policy.view(), "outcome": "in-progress"}
        if step == Next.GRACEFUL:
            self._power.power_off(bmc, graceful=True)
            enter(phase, Phase.SOFT, values, now)
            values["last_power_off"] = {**progress, "graceful_at": now}
            LOG.info("Reboot of %s: graceful power off requested", name)
        elif step == Next.FORCE:
            after = now - started if phase == Phase.SOFT else None
            self._power.power_off(bmc, graceful=False)
            enter(phase, Phase.HARD, values, now)
            values["last_power_off"] = {**progress, **({} if after is None
                                                       else {"forced_after": after})}
            LOG.info("Reboot of %s: %s", name, "forced power off requested" if after is None
                     else f"graceful shutdown did not finish in {after:.1f} s, forcing off")
        elif step == Next.GIVE_UP:
            got = power_record(policy, "not-off", at=now)
            enter(phase, Phase.IDLE, values, now)
            values.update(pending_reboot_since=None, last_power_off=got,
                          reboot_error=f"Reboot failed: {got['summary']}")
            self._nodes.record_reboot_power(name, [r.key for r in requests], got)
            self._nodes.delete_reboot(name, "")
            self._release_slot(name)
            LOG.warning("Reboot of %s failed: %s", name, got["summary"])

    def _got(self, name: str, record: NodeRecord, phase: Phase, now: float,
             requests: list[RebootRow], values: dict[str, object]) -> None:
        """The node is off: record what its requests got."""
        progress = record.last_power_off or {}
        policy = self.policy(requests)
        if progress.get("outcome") == "in-progress":
            policy = PowerPolicy(str(progress.get("power_policy", policy.policy)),
                                 as_float(progress.get("grace_period", policy.grace_period),
                                          policy.grace_period),
                                 str(progress.get("grace_period_from", policy.grace_from)))
        forced = progress.get("forced_after")
        after = float(forced) if phase == Phase.HARD and isinstance(forced, int | float) \
            else None
        outcome = {Phase.SOFT: "graceful", Phase.HARD: "forced" if after is not None
                   else "hard"}.get(phase, "already-off")
        got = power_record(policy, outcome, forced_after=after, at=now)
        values["last_power_off"] = got
        self._nodes.record_reboot_power(name, [r.key for r in requests], got)
        LOG.info("Reboot of %s: %s", name, got["summary"])

    def _skip_retired(self, record: NodeRecord) -> bool:
        """Spec 003: a retired node gets no action but those allowed for retired nodes
        (teardown, unretire); its requests stay, unexecuted, until it is unretired."""
        why = "skipped: node retired" + (f" ({record.retired_reason})"
                                         if record.retired_reason else "")
        if record.reboot_error != why:
            LOG.info("Reboot of %s: %s", record.name, why)
            self._nodes.update(record.name, reboot_error=why)
        return True

    def _powered_on(self, name: str, phase: Phase, now: float,
                    values: dict[str, object]) -> bool:
        enter(phase, Phase.IDLE, values, now)
        values["last_powered_on"] = now
        self._release_slot(name)  # in service again
        LOG.info("Reboot of %s: powered on again", name)
        return True

    def run(self) -> None:
        failures = FailureLog(LOG, "Reboot reconciler pass")
        while not self.stopping.is_set():
            failures.run(self.pass_once)
            self.stopping.wait(self.settings.interval)


def reboot_holder(node: str) -> str:
    """The slot holder of a node's reboot (one pending reboot per node)."""
    return f"drydock:reboot:{node}"


def policy_of(row: RebootRow) -> str:
    """A request's power policy (requests made before policies existed: by their mode)."""
    return str(row.power_policy or (HARD if row.mode == "hard" else SOFT_THEN_HARD))


def active(requests: list[RebootRow]) -> list[RebootRow]:
    """The requests still to act on: not those a soft-only power-off failed (they stay, and
    say so, until their client posts or deletes them again)."""
    return [r for r in requests if (r.power or {}).get("outcome") != "not-off"]
