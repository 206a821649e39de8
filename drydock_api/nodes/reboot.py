"""The reboot reconciler (spec 004): drives each node with reboot requests, one step per pass.

Per node, with `pending` = pending_reboot_since and `last` = last_powered_on:
- requests exist, the node is on, and pending is empty or earlier than last → pending = now;
- while pending is later than last, the node is powered off (hard if any request is hard,
  else graceful, forced after `soft_timeout`), whatever the node's desired power state;
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
from typing import Any

from common.context import RequestContext
from common.errors import BerthError
from common.workflow import IllegalTransition, transition
from drydock_api.db.models import NodeRecord
from drydock_api.db.nodes import NodeStore
from drydock_api.drivers.ports import OobDriver
from drydock_api.nodes.design import BmcAccess, Design

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
    Phase.SOFT: frozenset({Phase.HARD, Phase.OFF}),
    Phase.HARD: frozenset({Phase.OFF}),
    Phase.OFF: frozenset({Phase.ON, Phase.IDLE}),
    Phase.ON: frozenset({Phase.ON, Phase.IDLE}),
}


def enter(current: Phase, target: Phase, values: dict[str, Any], now: float) -> Phase:
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
    def __init__(self, nodes: NodeStore, oob: OobDriver,
                 designs: Callable[[Any, RequestContext], Design],
                 latest_ref: Callable[[], Any], settings: RebootSettings, owner: str,
                 clock: Callable[[], float]) -> None:
        self._nodes = nodes
        self._oob = oob
        self._designs = designs
        self._latest_ref = latest_ref
        self.settings = settings
        self.owner = owner
        self._clock = clock
        self.stopping = threading.Event()

    def pass_once(self) -> int:
        """One step on every node that needs one; returns how many nodes were acted on."""
        acted = 0
        for name in self._nodes.to_reconcile():
            if self._nodes.busy(name):
                continue
            if not self._nodes.claim(name, self.owner, self.settings.lease_seconds):
                continue
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
        """The node's BMC, or None and why not."""
        ref = record.design_ref or self._latest_ref()
        if not ref:
            why = getattr(self._latest_ref, "error", None)
            return None, ("no site design is known (no design_ref given, no committed "
                          "revision in Shipyard, no task run)" + (f": {why}" if why else ""))
        node = self._designs(ref, RequestContext()).nodes.get(record.name)
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
        power = self._oob.power_state(bmc)
        now = self._clock()
        requests = self._nodes.reboots(name)
        values: dict[str, Any] = {"power_state": power, "reboot_error": None}
        pending, last = record.pending_reboot_since, record.last_powered_on
        rebooting = pending is not None and (last is None or pending > last)
        if requests and power == "on" and not rebooting:
            pending, rebooting = now, True
            values.update(pending_reboot_since=now, shutdown_mode=None, shutdown_started=None)
            record.shutdown_mode = None
        if not rebooting:
            self._nodes.update(name, **values)
            return not requests
        done = self._advance(name, record, bmc, power, now, requests, values)
        self._nodes.update(name, **values)
        return done

    def _advance(self, name: str, record: NodeRecord, bmc: BmcAccess, power: str,
                 now: float, requests: list[Any], values: dict[str, Any]) -> bool:
        phase = Phase(record.shutdown_mode or Phase.IDLE.value)
        started = record.shutdown_started or now
        if phase == Phase.ON and power == "on":
            return self._powered_on(name, phase, now, values) and not requests
        shutting = phase in (Phase.IDLE, Phase.SOFT, Phase.HARD)
        if shutting and power != "off":
            hard = any(r.mode == "hard" for r in requests)
            if phase == Phase.IDLE:
                self._oob.power_off(bmc, graceful=not hard)
                enter(phase, Phase.HARD if hard else Phase.SOFT, values, now)
                LOG.info("Reboot of %s: %s power off requested", name,
                         "forced" if hard else "graceful")
            elif phase == Phase.SOFT and (hard or now - started >= self.settings.soft_timeout):
                self._oob.power_off(bmc, graceful=False)
                enter(phase, Phase.HARD, values, now)
                LOG.info("Reboot of %s: graceful shutdown did not finish, forcing off", name)
            return False
        if shutting:
            phase = enter(phase, Phase.OFF, values, now)
        if not record.torn_down:  # off, and last < pending: the unkeyed request has acted
            self._nodes.delete_reboot(name, "")
        if self._nodes.reboots(name) or record.torn_down:
            return False  # held off until every keyed request is released
        if power == "on":
            return self._powered_on(name, phase, now, values)
        if phase == Phase.OFF or now - started >= self.settings.power_on_retry:
            self._oob.power_on(bmc)
            enter(phase, Phase.ON, values, now)
        return False

    def _skip_retired(self, record: NodeRecord) -> bool:
        """Spec 003: a retired node gets no action but those allowed for retired nodes
        (teardown, unretire); its requests stay, unexecuted, until it is unretired."""
        why = "skipped: node retired" + (f" ({record.retired_reason})"
                                         if record.retired_reason else "")
        if record.reboot_error != why:
            LOG.info("Reboot of %s: %s", record.name, why)
            self._nodes.update(record.name, reboot_error=why)
        return True

    @staticmethod
    def _powered_on(name: str, phase: Phase, now: float, values: dict[str, Any]) -> bool:
        enter(phase, Phase.IDLE, values, now)
        values["last_powered_on"] = now
        LOG.info("Reboot of %s: powered on again", name)
        return True

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.pass_once()
            except Exception:
                LOG.exception("Reboot reconciler pass failed")
            self.stopping.wait(self.settings.interval)
