"""Drain a node like `kubectl drain --force --ignore-daemonsets --delete-emptydir-data`, safely.

Safe eviction (spec 002): the node gets its maintenance labels first (Berth's, and the signal
per-node agents obey), then nothing is evicted until no node annotation matches an eviction-lock
pattern; pods annotated as holds go last. Per-node agents (DaemonSet-like owners, or pods with
an agent label) are left to their operators, whose agent locks guard only those agents: they
never hold up an eviction (decommission waits for them after clear-labels, see agents.py).
"""

from __future__ import annotations

import contextvars
import fnmatch
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from common.clients.generated.promenade import DisruptedPod
from common.disruption import Leave
from common.errors import BadRequest
from common.poll import NotYet, poll
from common.status import Message, simple_message
from promenade_api.errors import DrainNodeError
from promenade_api.kube.blockers import (
    Bypass,
    budget_blocker,
    budgets_now,
    describe,
    lock_blocker,
)
from promenade_api.kube.model import EvictResult, Pod
from promenade_api.kube.port import KubePort
from promenade_api.kube.progress import (
    HOLD,
    TERMINATING,
    WAITING,
    DrainProgress,
    lock_reason,
    refusal_reason,
)
from promenade_api.kube.refusals import Refusals, Refused

LOG = logging.getLogger(__name__)
_STATES = {"evicted": "done", "gone": "done", "retry": "retry"}  # else: failed
Clock = Callable[[], float]
Sleep = Callable[[float], None]
WAIT_SLICE = 1.0  # waits for pods to leave are sliced so a cancellation is seen within this


# Spec 002: per-node agents whose controllers are not the built-in DaemonSet, which kubectl
# alone protects. An entry is a kind, or "api-group/Kind" for a kind of one API group.
DAEMONSET_LIKE_KINDS = ("ConfiguredDaemonSet", "apps.kruise.io/DaemonSet")
# Spec 002: Yaook's per-node agents (a StatefulSet each, under the agent's custom resource),
# recognised by the label Yaook puts on their pods; their operators delete them once the node
# is signalled for maintenance, and only then release the node's l2-lock annotations.
AGENT_POD_LABELS = tuple(("state.yaook.cloud/parent-plural", plural) for plural in (
    "novacomputenodes", "neutronl2agents", "neutronl3agents", "neutrondhcpagents",
    "neutronbgpdragents", "neutronovnagents", "neutronovnbgpagents"))
AGENT_MAINTENANCE_LABELS = (("maintenance.yaook.cloud/maintenance-required-l2-agent", "True"),)


def daemonset_like(kind: str, api_version: str, kinds: Sequence[str]) -> bool:
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return kind in kinds or bool(group and f"{group}/{kind}" in kinds)


@dataclass(frozen=True)
class DrainSettings:
    """The [drain] options."""

    retry_delay: float = 5.0
    maintenance_label: tuple[str, str] = ("maintenance.berth.io/required", "true")
    lock_patterns: tuple[str, ...] = ("eviction-lock.berth.io/*",)
    lock_poll_interval: float = 5.0
    daemonset_like_kinds: tuple[str, ...] = DAEMONSET_LIKE_KINDS
    parallelism: int = 16
    hold_annotation: str = "berth.io/eviction-hold"
    agent_lock_patterns: tuple[str, ...] = ("l2-lock.maintenance.yaook.cloud/*",)
    agent_pod_labels: tuple[tuple[str, str], ...] = AGENT_POD_LABELS
    agent_maintenance_labels: tuple[tuple[str, str], ...] = AGENT_MAINTENANCE_LABELS

    def signal_labels(self) -> dict[str, str]:
        """The labels that tell lock holders and per-node agents the node goes out of service."""
        return {**dict(self.agent_maintenance_labels), self.maintenance_label[0]:
                self.maintenance_label[1]}

    def is_agent(self, pod: Pod) -> bool:
        """A per-node agent its operator removes (never evicted by Berth)."""
        return any(pod.labels.get(k) == v for k, v in self.agent_pod_labels)


def validate_timeouts(timeout: int, grace_period: int) -> None:
    """400 unless 1 <= timeout and 0 <= grace period < timeout (the spec's rule)."""
    problems = []
    if timeout < 1:
        problems.append(f"timeout must be at least 1 second, not {timeout}")
    if grace_period < 0:
        problems.append(f"grace-period must not be negative, not {grace_period}")
    if grace_period >= timeout:
        problems.append(f"grace-period ({grace_period}) must be less than timeout ({timeout})")
    if problems:
        raise BadRequest("Invalid drain parameters",
                         messages=[simple_message(p) for p in problems])


@dataclass
class DrainPlan:
    """Which pods are evicted (now or last), deleted, awaited or skipped, and why."""

    evict: list[Pod] = field(default_factory=list)
    hold: list[Pod] = field(default_factory=list)
    delete: list[Pod] = field(default_factory=list)
    awaiting: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def plan_drain(pods: Iterable[Pod], settings: DrainSettings,
               daemonset_exists: Callable[[str, str], bool]) -> DrainPlan:
    """Classify the node's pods by kubectl's filters plus the DaemonSet-like kinds."""
    plan = DrainPlan()
    for pod in pods:
        ctl = pod.controller
        if pod.is_mirror:
            plan.skipped.append((pod, "mirror pod"))
        elif pod.deleting:
            plan.awaiting.append(pod)
        elif pod.terminal:
            plan.delete.append(pod)
        elif ctl and daemonset_like(ctl.kind, ctl.api_version, settings.daemonset_like_kinds):
            plan.skipped.append((pod, f"managed by {ctl.kind} {ctl.name} (DaemonSet-like)"))
        elif settings.is_agent(pod):
            plan.skipped.append((pod, "per-node agent, left to its operator"))
        elif ctl and ctl.kind == "DaemonSet" and daemonset_exists(pod.namespace, ctl.name):
            plan.skipped.append((pod, f"managed by DaemonSet {ctl.name}"))
        else:
            if ctl is None:
                plan.warnings.append(f"{pod.key}: not managed by a controller; removed anyway")
            elif ctl.kind == "DaemonSet":
                plan.warnings.append(f"{pod.key}: its DaemonSet {ctl.name} is gone; removed")
            if pod.has_empty_dir:
                plan.warnings.append(f"{pod.key}: uses emptyDir; its local data is deleted")
            target = plan.hold if settings.hold_annotation in pod.annotations else plan.evict
            target.append(pod)
    return plan


@dataclass
class DrainReport:
    evicted: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    disrupted: list[DisruptedPod] = field(default_factory=list)  # deleted past a named PDB

    def messages(self) -> list[Message]:
        out = [simple_message(f"Evicted {p}", error=False) for p in self.evicted]
        out += [simple_message(f"Deleted {p}", error=False) for p in self.deleted]
        out += [simple_message(
            f"Deleted {d['pod']} past PodDisruptionBudget {d['budget']}, which still refused "
            f"its eviction (disruption allowed by {d['allowed_by']})", error=False, **d)
            for d in self.disrupted]
        out += [simple_message(f"Skipped {s['pod']}: {s['reason']}", error=False)
                for s in self.skipped]
        out += [simple_message(f"Warning: {w}", error=False) for w in self.warnings]
        return out

    def as_dict(self) -> dict[str, object]:
        return {"evicted": self.evicted, "deleted": self.deleted, "skipped": self.skipped,
                "warnings": self.warnings, "disrupted": self.disrupted}


def held_locks(annotations: dict[str, str], patterns: Sequence[str]) -> list[str]:
    """Annotation keys matching any eviction-lock glob pattern."""
    return sorted(k for k in annotations if any(fnmatch.fnmatchcase(k, p) for p in patterns))


class Drainer:
    """One drain of one node; `run()` returns the report or raises DrainNodeError."""

    def __init__(self, kube: KubePort, settings: DrainSettings, *, clock: Clock,
                 sleep: Sleep, check: Callable[[], None] = lambda: None,
                 progress: Callable[[str], DrainProgress] | None = None,
                 wall: Clock = time.time) -> None:
        self._kube, self._s, self._clock, self._sleep = kube, settings, clock, sleep
        self._bypass = Bypass(None, "", clock, wall)
        self._refused_by: dict[str, str] = {}  # pod key -> the budget that last refused it
        self._check = check  # raises at a safe point when the drain is cancelled
        self._progress_of = progress or (lambda node: DrainProgress(
            node, None, 0.0, lambda: 0.0, lambda record: None))
        self._p = self._progress_of("")

    def run(self, node: str, timeout: int, grace_period: int, leave: Leave | None = None,
            operator: str = "") -> DrainReport:
        """`leave`: an operator's (`operator`) leave to delete the pods of named budgets
        that still refuse their eviction once they have refused for `leave.after` s."""
        validate_timeouts(timeout, grace_period)
        self._kube.get_node(node)
        self._p = self._progress_of(node)
        self._bypass = Bypass(leave, operator, self._bypass.clock, self._bypass.wall)
        if leave is not None:
            LOG.warning("drain %s: %s allows disrupting PodDisruptionBudget(s) %s once they "
                        "have refused for %ss", node, operator, ", ".join(leave.budgets),
                        leave.after)
        try:
            return self._run(node, timeout, grace_period)
        except BaseException:
            self._p.phase("failed")
            raise
        finally:
            self._p.flush()

    def _run(self, node: str, timeout: int, grace_period: int) -> DrainReport:
        deadline = self._clock() + timeout
        signal = self._s.signal_labels()
        LOG.info("drain %s: cordoning and setting %s", node,
                 ", ".join(f"{k}={v}" for k, v in signal.items()))
        patched = self._kube.patch_node(node, labels=signal, unschedulable=True)
        self._wait_for_locks(node, patched.annotations, deadline)
        plan = plan_drain(self._kube.list_pods(node), self._s, self._ds_lookup())
        report = DrainReport(warnings=list(plan.warnings), skipped=[
            {"pod": p.key, "reason": r} for p, r in plan.skipped],
            disrupted=self._bypass.deleted)
        self._p.phase("evicting")
        self._p.set((p.key for p in plan.evict + plan.delete), WAITING)
        self._p.set((p.key for p in plan.hold), HOLD)
        self._p.set((p.key for p in plan.awaiting), TERMINATING)
        self._p.blockers([])
        self._p.flush()
        failures: dict[str, str] = {}
        for batch, how in ((plan.delete, "delete"), (plan.evict, "evict")):
            if batch:
                self._remove_batch(node, batch, how, grace_period, deadline, report, failures)
        if failures:  # hold pods go last, and only once everything else has gone
            failures.update({p.key: f"{p.key}: not evicted (eviction hold) because other pods "
                             "did not leave" for p in plan.hold})
        elif plan.hold:
            self._remove_batch(node, plan.hold, "evict", grace_period, deadline, report,
                               failures)
        self._await(node, plan.awaiting, deadline, failures)
        if failures:
            self._fail(node, failures, report)
        self._p.phase("done")
        LOG.info("drain %s: done (%d evicted, %d deleted, %d skipped)", node,
                 len(report.evicted), len(report.deleted), len(report.skipped))
        return report

    def _ds_lookup(self) -> Callable[[str, str], bool]:
        cache: dict[tuple[str, str], bool] = {}

        def exists(namespace: str, name: str) -> bool:
            if (namespace, name) not in cache:
                cache[(namespace, name)] = self._kube.owner_exists("DaemonSet", namespace, name)
            return cache[(namespace, name)]

        return exists

    def _wait_for_locks(self, node: str, annotations: dict[str, str], deadline: float) -> None:
        if not held_locks(annotations, self._s.lock_patterns):
            return
        self._p.phase("waiting for eviction locks")
        plan = plan_drain(self._kube.list_pods(node), self._s, self._ds_lookup())
        waiting = [p.key for p in plan.evict + plan.hold + plan.delete]
        notes, checks = annotations, 0  # the node's annotations at the last check

        def released() -> bool | NotYet[list[str]]:
            nonlocal notes, checks
            if checks:  # read again before each check but the first
                notes = self._kube.get_node(node).annotations
            checks += 1
            held = held_locks(notes, self._s.lock_patterns)
            if not held:
                return True
            self._p.set(waiting, "; ".join(lock_reason(k, notes.get(k, "")) for k in held))
            self._p.blockers([lock_blocker(k, notes.get(k, ""), waiting) for k in held])
            self._p.flush()
            return NotYet(held)

        def late(held: list[str]) -> bool:
            plan = plan_drain(self._kube.list_pods(node), self._s, self._ds_lookup())
            pods = sorted(p.key for p in plan.evict + plan.hold + plan.delete)
            blockers = [lock_blocker(k, notes.get(k, ""), pods) for k in held]
            raise DrainNodeError(
                f"Drain of {node} timed out waiting for eviction locks; nothing was evicted",
                messages=[simple_message(describe(b), blocker=b) for b in blockers]
                + [simple_message(f"Pod {p} still present on {node}", pod=p) for p in pods],
                details={"locks": held, "node": node, "remaining_pods": pods,
                         "blockers": blockers})

        def waiting_for(held: list[str]) -> None:
            LOG.info("drain %s: waiting for eviction locks %s", node, ", ".join(held))
            self._check()

        poll(released, deadline=deadline, interval=self._s.lock_poll_interval, expire=late,
             between=waiting_for, clock=self._clock, sleep=self._sleep)

    def _remove_batch(self, node: str, pods: list[Pod], how: str, grace: int, deadline: float,
                      report: DrainReport, failures: dict[str, str]) -> None:
        """Evict (or delete) in parallel rounds; a pod refused with 429 waits, holding no slot
        of the pool, until its budget allows again or the retry delay has passed."""
        LOG.info("drain %s: %s %d pod(s)", node, "evicting" if how == "evict" else "deleting",
                 len(pods))
        removed: list[Pod] = []
        refusals = Refusals(self._kube, self._s.retry_delay, self._clock, self._sleep)
        pending = list(pods)
        with ThreadPoolExecutor(max_workers=min(self._s.parallelism, len(pods))) as pool:
            while pending:
                futures = [pool.submit(contextvars.copy_context().run, self._attempt, pod, how,
                                       grace) for pod in pending]
                retry: list[str] = []
                for pod, future in zip(pending, futures, strict=True):
                    done_how, result = future.result()
                    state, message = _STATES.get(result.outcome, "failed"), result.message
                    if result.outcome == "evicted":
                        refusals.evicted(pod)
                    if state == "done":
                        removed.append(pod)
                        self._p.set([pod.key], TERMINATING)
                        (report.deleted if done_how == "delete" else report.evicted).append(
                            pod.key)
                    elif state == "failed":
                        failures[pod.key] = f"{pod.key}: eviction failed: {message}"
                        self._p.set([pod.key], f"eviction failed: {message}")
                    elif self._disrupt(node, pod, result.budget, grace, report, removed,
                                       failures):
                        continue
                    else:
                        retry.append(message)
                        refusals.refused(pod, message, result.budget)
                        key = f"{pod.namespace}/{result.budget}" if result.budget else ""
                        self._bypass.refused(key)
                        self._refused_by[pod.key] = key
                        self._p.set([pod.key], refusal_reason(message))
                self._show_blockers(refusals)
                if retry and removed:  # while some wait, show which evicted pods have left
                    left = self._kube.wait_pods_gone(node, {p.uid for p in removed}, 0.0)
                    self._p.gone(p.key for p in removed if p.uid not in left)
                self._p.flush()
                if retry:
                    LOG.info("drain %s: %d eviction(s) refused (%s); retrying when the budget "
                             "allows, at the latest in %ss", node, len(retry), retry[0],
                             self._s.retry_delay)
                pending = self._wait_to_retry(refusals, deadline, failures)
        self._await(node, removed, deadline, failures)

    def _disrupt(self, node: str, pod: Pod, budget: str, grace: int, report: DrainReport,
                 removed: list[Pod], failures: dict[str, str]) -> bool:
        """A pod whose named budget has refused past the operator's deadline and refused
        again now: deleted (not evicted), recorded. False for any other refused pod."""
        key = f"{pod.namespace}/{budget}" if budget else ""
        if not key or not self._bypass.ripe(key):
            return False
        status = budgets_now(self._kube.list_budgets, [key]).get(key)
        result = self._kube.delete_pod(pod, grace)
        if result.outcome in ("evicted", "gone"):
            self._bypass.record(node, pod, key, status)
            removed.append(pod)
            self._p.set([pod.key], TERMINATING)
            self._p.disrupted(self._bypass.deleted)
        else:
            failures[pod.key] = f"{pod.key}: deletion past {key} failed: {result.message}"
        return True

    def _show_blockers(self, refusals: Refusals) -> None:
        waiting = refusals.blocking()
        states = budgets_now(self._kube.list_budgets, [k for k in waiting if k])
        self._p.blockers([budget_blocker(k, (p.key for p in pods), states.get(k))
                          for k, pods in sorted(waiting.items()) if k])

    def _attempt(self, pod: Pod, how: str, grace: int) -> tuple[str, EvictResult]:
        """One try: how it was removed ('evict'|'delete') and the API's answer."""
        result = (self._kube.delete_pod(pod, grace) if how == "delete"
                  else self._kube.evict(pod, grace))
        if result.outcome == "unsupported":
            how, result = "delete", self._kube.delete_pod(pod, grace)
        return how, result

    def _wait_to_retry(self, refusals: Refusals, deadline: float,
                       failures: dict[str, str]) -> list[Pod]:
        """The refused pods to try again now, once there are any; [] when none is left to
        try before the deadline (those are failures). The pods of a named budget are tried
        once more when the operator's deadline for it comes (deleted if still refused)."""
        while refusals:
            self._give_up(refusals.expire(deadline), failures)
            ripe = [k for k in refusals.blocking() if k and self._bypass.ripe(k)]
            ready = [p for k in ripe for p in refusals.release(k)] + refusals.take()
            if ready or not refusals:
                return ready
            if self._clock() >= deadline:
                self._give_up(refusals.expire(None), failures)
                return []
            self._check()
            bypass = self._bypass.next_due([k for k in refusals.blocking() if k])
            refusals.wait(min(refusals.next_due(), deadline,
                              deadline if bypass is None else bypass))
        return []

    @staticmethod
    def _give_up(refused: list[Refused], failures: dict[str, str]) -> None:
        for r in refused:
            failures[r.pod.key] = (f"{r.pod.key}: eviction still refused at the timeout: "
                                   f"{r.message}")

    def _await(self, node: str, pods: list[Pod], deadline: float,
               failures: dict[str, str]) -> None:
        if not pods:
            return
        left = {p.uid for p in pods}
        started = self._clock()

        def gone() -> None | NotYet[None]:
            nonlocal left, started
            started = self._clock()
            piece = min(WAIT_SLICE, max(0.0, deadline - started))
            left = self._kube.wait_pods_gone(node, left, piece)
            self._p.gone(p.key for p in pods if p.uid not in left)
            self._p.flush()
            return NotYet() if left else None

        def rest(seconds: float) -> None:  # a watch answered early: do not spin
            pause = min(seconds, started + WAIT_SLICE - self._clock())
            if pause > 0:
                self._sleep(pause)

        def checked(_: None) -> None:
            self._check()

        poll(gone, deadline=deadline, interval=WAIT_SLICE, expire=lambda _: None,
             between=checked, clock=self._clock, sleep=rest)
        for pod in pods:
            if pod.uid in left:
                failures.setdefault(pod.key, f"{pod.key}: still present on {node} at the timeout")

    def _fail(self, node: str, failures: dict[str, str], report: DrainReport) -> None:
        annotations = self._kube.get_node(node).annotations
        locks = held_locks(annotations, self._s.lock_patterns)
        remaining = [p.key for p in self._kube.list_pods(node)
                     if p.key in failures]
        by_budget: dict[str, list[str]] = {}
        for pod in remaining:
            if self._refused_by.get(pod) and "still refused" in failures[pod]:
                by_budget.setdefault(self._refused_by[pod], []).append(pod)
        states = budgets_now(self._kube.list_budgets, by_budget)
        blockers = [budget_blocker(k, pods, states.get(k)) for k, pods in
                    sorted(by_budget.items())]
        blockers += [lock_blocker(k, annotations.get(k, ""), remaining) for k in locks]
        messages = [simple_message(describe(b), blocker=b) for b in blockers]
        messages += [simple_message(m, pod=k) for k, m in sorted(failures.items())]
        messages += [simple_message(f"Eviction lock {k} still held on {node}") for k in locks]
        raise DrainNodeError(
            f"Drain of {node} did not complete; the node stays cordoned",
            messages=messages + report.messages(),
            details={"node": node, "remaining_pods": remaining, "locks": locks,
                     "blockers": blockers, **report.as_dict()})
