"""Decommission: drain (or fence), clear labels, await the per-node agents, remove etcd members,
await etcd, stop the kubelet.

The per-node agents of spec 002 (Yaook) hold locks on the node that their operators release
only after removing them, which the drain's maintenance labels and clear-labels set off: so the
agents are awaited after clear-labels (at most the drain timeout) and before the kubelet stops.

Each phase starts from what is already true, so a decommission can be run again after any
failure: a node gone from Kubernetes only loses its etcd members; a node an earlier
decommission labelled for the kubelet shutdown (its last phase, after the drain and
clear-labels succeeded; e.g. Promenade died while waiting for the kubelet) goes through the
etcd phases and the kubelet shutdown again, Ready or not; any other node that is not Ready is
refused unless the caller confirmed its power-off (`fenced`), in which case its pods are
removed by the out-of-service taint instead of evictions that no kubelet would ever finish.
A cancellation (POST .../decommission/cancel) is honoured at the next safe point.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from common.disruption import Leave
from common.errors import BerthError, NotFound
from common.status import Message, simple_message
from promenade_api.db.runs import PhaseState
from promenade_api.errors import DisassociateStepFailure, NodeNotReady, OperationCancelled
from promenade_api.etcd.model import ClusterSpec
from promenade_api.kube.drain import DrainReport
from promenade_api.kube.labels import DECOMMISSION_LABEL
from promenade_api.kube.model import Node
from promenade_api.kube.port import KubeNotFound, KubePort
from promenade_api.service import Promenade

LOG = logging.getLogger(__name__)
CANCEL_ANNOTATION = "berth.io/decommission-cancel-requested-at"


@dataclass(frozen=True)
class DecommissionParams:
    """The query parameters of POST /nodes/{node_id}/decommission (None: the step's default)."""

    drain_timeout: int | None = None
    drain_grace_period: int | None = None
    clear_labels_timeout: int | None = None
    remove_etcd_timeout: int | None = None
    etcd_ready_timeout: int | None = None
    fenced: bool = False  # the caller confirmed at the BMC that the node is powered off
    leave: Leave | None = None  # the operator's leave to disrupt named budgets (drain)
    operator: str = ""  # who gave that leave


class Cancellation:
    """A decommission started at `started` is cancelled once its node carries a later
    cancellation time (every Promenade process sees the same node object)."""

    def __init__(self, kube: KubePort, node: str, started: float) -> None:
        self._kube, self._node, self._started = kube, node, started

    def check(self) -> None:
        try:
            value = self._kube.get_node(self._node).annotations.get(CANCEL_ANNOTATION)
        except KubeNotFound:
            return
        try:
            requested = float(value or "")
        except ValueError:
            return
        if requested >= self._started:
            raise OperationCancelled(f"Decommission of {self._node} was cancelled; it stopped "
                                     "at a safe point")


def request_cancel(kube: KubePort, node: str, now: float) -> bool:
    """Ask every running decommission of the node to stop; False when the node is unknown."""
    try:
        kube.patch_node(node, annotations={CANCEL_ANNOTATION: f"{now:.6f}"})
    except KubeNotFound:
        return False
    return True


Phase = tuple[str, Callable[[], object] | str, bool]  # name, run (or why skipped), fatal


def past_clear_labels(current: Node) -> bool:
    """An earlier decommission got to the kubelet shutdown: that phase sets its label only
    after the drain, clear-labels and etcd phases succeeded (the label itself would be taken
    away by a second clear-labels, stranding the kubelet-shutdown pod)."""
    return current.labels.get(DECOMMISSION_LABEL) == "enabled"


def phases(svc: Promenade, node: str, current: Node | None, clusters: list[ClusterSpec],
            params: DecommissionParams, cancel: Cancellation) -> list[Phase]:
    ready = svc.settings.etcd_ready_timeout if params.etcd_ready_timeout is None \
        else params.etcd_ready_timeout
    timeout = svc.settings.drain_timeout if params.drain_timeout is None \
        else params.drain_timeout
    agents: Phase = ("agent-locks", lambda: svc.await_agents(node, timeout, cancel.check),
                     True)
    etcd: list[Phase] = [
        ("remove-etcd", lambda: svc.remove_etcd(node, clusters, params.remove_etcd_timeout,
                                                require_node=False), True),
        ("etcd-ready", lambda: svc.remover().wait_stable(node, clusters, ready), True)]
    if current is None:
        gone = f"skipped: {node} is not known to Kubernetes"
        return [("drain", gone, True), ("clear-labels", gone, True), ("agent-locks", gone, True),
                *etcd, ("shutdown-kubelet", gone, False)]
    if past_clear_labels(current) and not params.fenced:
        earlier = (f"skipped: an earlier decommission of {node} got past it "
                   f"({DECOMMISSION_LABEL}=enabled)")
        kubelet: Callable[[], object] | str = (
            (lambda: svc.shutdown_kubelet(node)) if current.ready == "True"
            else f"skipped: the kubelet of {node} is already stopped (Ready={current.ready})")
        return [("drain", earlier, True), ("clear-labels", earlier, True),
                ("agent-locks", earlier, True), *etcd, ("shutdown-kubelet", kubelet, False)]
    first: Phase = (("fence", lambda: svc.fence(node, timeout, cancel.check), True)
                    if params.fenced else
                    ("drain", lambda: svc.drain(node, params.drain_timeout,
                                                params.drain_grace_period, cancel.check,
                                                params.leave, params.operator), True))
    return [first,
            ("clear-labels", lambda: svc.clear_labels(node, params.clear_labels_timeout), True),
            agents, *etcd,
            ("shutdown-kubelet", f"skipped: {node} is powered off" if params.fenced
             else lambda: svc.shutdown_kubelet(node), False)]


def current_node(svc: Promenade, node: str, fenced: bool, known: bool) -> Node | None:
    """The node, None when Kubernetes no longer knows it (404 when the design does not know
    it either); refuses a NotReady node whose power-off is not confirmed."""
    try:
        current = svc.kube.get_node(node)
    except KubeNotFound as exc:
        if not known:
            raise NotFound(f"Node {node} is known neither to Kubernetes nor to the "
                           "design") from exc
        return None
    if current.ready != "True" and not fenced and not past_clear_labels(current):
        since = f" since {current.ready_since}" if current.ready_since else ""
        raise NodeNotReady(
            f"{node} is not Ready (Ready={current.ready}{since}): its pods cannot be evicted "
            "and are not deleted while its power-off is unconfirmed; nothing was changed",
            messages=[simple_message(f"{node}: power the node off and confirm it at its BMC, "
                                     "then decommission with fenced=true")],
            details={"node": node, "ready": current.ready, "ready_since": current.ready_since})
    return current


class Journal(Protocol):
    """Where the phases' progress is kept (a durable run: decommission_run.RunJournal)."""

    def recorded(self, name: str) -> list[Message] | None: ...

    def started(self, name: str) -> list[Message]: ...

    def ended(self, name: str, state: PhaseState, outcome: str,
              messages: list[Message]) -> None: ...


class NoJournal:
    """Progress kept only in the call itself."""

    def recorded(self, name: str) -> list[Message] | None:
        return None

    def started(self, name: str) -> list[Message]:
        return []

    def ended(self, name: str, state: PhaseState, outcome: str,
              messages: list[Message]) -> None:
        return None


def decommission(svc: Promenade, node: str, clusters: list[ClusterSpec],
                 params: DecommissionParams, design_nodes: Collection[str] = (), *,
                 journal: Journal | None = None, started: float | None = None
                 ) -> list[Message]:
    """Run every phase in order; a failing phase (but the kubelet's) stops with 500. With a
    `journal`, a phase it has an outcome for is not run again, and each phase's start is kept
    before its effect and its outcome after; `started`: when the run began (cancellations)."""
    journal = journal or NoJournal()
    known = node in design_nodes or any(
        node in c.members or node in c.members.values() for c in clusters)
    current = current_node(svc, node, params.fenced, known)
    cancel = Cancellation(svc.kube, node, svc.wall() if started is None else started)
    messages: list[Message] = []
    for name, run, fatal in phases(svc, node, current, clusters, params, cancel):
        done = journal.recorded(name)
        if done is not None:
            messages += done
            continue
        if isinstance(run, str):
            messages.append(simple_message(f"{name}: {run}", error=False, step=name))
            journal.ended(name, "skipped", run, messages[-1:])
            continue
        LOG.info("decommission %s: step %s", node, name)
        mark = len(messages)
        messages += journal.started(name)
        _run_phase(node, name, run, fatal, cancel, messages, mark, journal)
    LOG.info("decommission %s: done", node)
    return messages


def _run_phase(node: str, name: str, run: Callable[[], object], fatal: bool, cancel: Cancellation,
               messages: list[Message], mark: int, journal: Journal) -> None:
    try:
        cancel.check()
        result = run()
    except OperationCancelled as exc:
        LOG.warning("decommission %s: cancelled before or during %s", node, name)
        messages.append(simple_message(f"{name}: cancelled", step=name))
        journal.ended(name, "failed", "cancelled", messages[mark:])
        raise OperationCancelled(exc.message, messages=list(messages),
                                 details={"node": node, "phase": name}) from exc
    except BerthError as exc:
        messages += _failure(name, exc, fatal)
        journal.ended(name, "failed" if fatal else "failed-not-fatal", exc.headline(),
                      messages[mark:])
        if fatal:
            LOG.warning("decommission %s: step %s failed: %s", node, name, exc.message)
            raise DisassociateStepFailure(
                f"Decommission of {node} failed at step {name}: {exc.headline()}",
                messages=messages, details={"node": node, "failed_step": name}) from exc
        LOG.warning("decommission %s: %s failed (not fatal): %s", node, name, exc.message)
        return
    messages += _result_messages(name, result)
    journal.ended(name, "succeeded", "succeeded", messages[mark:])


def _result_messages(name: str, result: object) -> list[Message]:
    messages = [simple_message(f"{name}: succeeded", error=False, step=name)]
    if isinstance(result, list):  # remove-etcd says what it did per cluster
        messages += [{**m, "error": False, "step": name} for m in result]
    if isinstance(result, DrainReport):  # what was evicted, what was skipped and why
        messages += drain_messages(name, result)
    elif name == "fence" and isinstance(result, dict):  # what the taint removed
        messages.append(simple_message(
            f"{name}: {len(result.get('removed') or [])} pod(s) removed by the "
            f"{result.get('taint')} taint, {len(result.get('tolerating') or [])} "
            "tolerating it left", error=False, step=name, report=result))
    return messages


def drain_messages(name: str, report: DrainReport) -> list[Message]:
    """The drain's report in the decommission's answer: a summary carrying the whole report
    (`report`: evicted, deleted, skipped with the reason, warnings), then one message per pod."""
    skipped = "; ".join(f"{s['pod']} ({s['reason']})" for s in report.skipped[:20])
    more = f" and {len(report.skipped) - 20} more" if len(report.skipped) > 20 else ""
    summary = (f"{name}: evicted {len(report.evicted)} pod(s), deleted {len(report.deleted)}, "
               f"skipped {len(report.skipped)}" + (f": {skipped}{more}" if skipped else ""))
    return [simple_message(summary, error=False, step=name, report=report.as_dict()),
            *({**m, "step": name} for m in report.messages())]


def _failure(name: str, exc: BerthError, fatal: bool) -> list[Message]:
    failed = [simple_message(f"{name}: {exc.message} ({exc.instance_reason})", error=fatal,
                             step=name)]
    return failed + [{**m, "error": fatal and m.get("error", True), "step": name}
                     for m in exc.messages if m.get("message") != exc.message]
