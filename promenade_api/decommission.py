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

Each phase is a step definition (common.workflow.StepDef) that phase_engine runs through the
one attempt judge of Shipyard's and Drydock's steps (common.engine).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from common.disruption import Leave
from common.errors import NotFound
from common.status import Message, simple_message
from common.workflow import Done, Outcome, StepDef, StepPolicy
from promenade_api.errors import NodeNotReady, OperationCancelled
from promenade_api.etcd.model import ClusterSpec
from promenade_api.kube.drain import DrainReport
from promenade_api.kube.labels import DECOMMISSION_LABEL
from promenade_api.kube.model import Node
from promenade_api.kube.port import KubeNotFound, KubePort
from promenade_api.phase_engine import Env, Journal, NoJournal, Phase, run_phases
from promenade_api.service import Promenade, Settings

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


@dataclass(frozen=True)
class PhaseContext:
    """What a phase's step gets."""

    svc: Promenade
    node: str
    clusters: list[ClusterSpec]
    params: DecommissionParams
    cancel: Cancellation


def phase_timeouts(settings: Settings, p: DecommissionParams) -> dict[str, int]:
    """Each phase's overall timeout (s): the request's parameter, else the setting."""
    drain = settings.drain_timeout if p.drain_timeout is None else p.drain_timeout
    return {"drain": drain, "fence": drain, "agent-locks": drain,
            "clear-labels": settings.clear_labels_timeout if p.clear_labels_timeout is None
            else p.clear_labels_timeout,
            "remove-etcd": settings.remove_etcd_timeout if p.remove_etcd_timeout is None
            else p.remove_etcd_timeout,
            "etcd-ready": settings.etcd_ready_timeout if p.etcd_ready_timeout is None
            else p.etcd_ready_timeout,
            "shutdown-kubelet": settings.kubelet_timeout}


def _timeout(c: PhaseContext, name: str) -> int:
    return phase_timeouts(c.svc.settings, c.params)[name]


def _policy(c: PhaseContext, name: str) -> StepPolicy:
    """A phase waits and retries inside itself (evictions until the drain timeout, etcd
    until its removal timeout): an error reaching the engine outlived those, so it is not
    tried again (retries 0, no outage window)."""
    s = c.svc.settings
    return StepPolicy(timeout=float(_timeout(c, name)), retries=0,
                      attempt_timeout=s.decommission_attempt_timeout or None)


def _step(name: str, act: Callable[[PhaseContext], object]) -> StepDef[PhaseContext]:
    """A phase as a step definition: a cancellation is honoured before its effect; its
    result becomes the phase's messages."""

    def run(c: PhaseContext) -> Outcome:
        c.cancel.check()
        return Done(f"{name}: succeeded", records=tuple(_result_messages(name, act(c))))

    return StepDef(name, run, lambda c: _policy(c, name))


STEPS: dict[str, StepDef[PhaseContext]] = {s.name: s for s in (
    _step("drain", lambda c: c.svc.drain(c.node, c.params.drain_timeout,
                                         c.params.drain_grace_period, c.cancel.check,
                                         c.params.leave, c.params.operator)),
    _step("fence", lambda c: c.svc.fence(c.node, _timeout(c, "fence"), c.cancel.check)),
    _step("clear-labels", lambda c: c.svc.clear_labels(c.node, c.params.clear_labels_timeout)),
    _step("agent-locks", lambda c: c.svc.await_agents(c.node, _timeout(c, "agent-locks"),
                                                      c.cancel.check)),
    _step("remove-etcd", lambda c: c.svc.remove_etcd(c.node, c.clusters,
                                                     c.params.remove_etcd_timeout,
                                                     require_node=False)),
    _step("etcd-ready", lambda c: c.svc.remover().wait_stable(c.node, c.clusters,
                                                              _timeout(c, "etcd-ready"))),
    _step("shutdown-kubelet", lambda c: c.svc.shutdown_kubelet(c.node)),
)}


def past_clear_labels(current: Node) -> bool:
    """An earlier decommission got to the kubelet shutdown: that phase sets its label only
    after the drain, clear-labels and etcd phases succeeded (the label itself would be taken
    away by a second clear-labels, stranding the kubelet-shutdown pod)."""
    return current.labels.get(DECOMMISSION_LABEL) == "enabled"


def phases(node: str, current: Node | None, params: DecommissionParams
           ) -> list[Phase[PhaseContext]]:
    """The phases a decommission of `node` runs from the cluster's state (`current`: the
    node, None when Kubernetes no longer knows it), each a step or why it is skipped."""
    def of(name: str, skip: str = "", fatal: bool = True) -> Phase[PhaseContext]:
        return Phase(name, skip or STEPS[name], fatal)

    etcd = [of("remove-etcd"), of("etcd-ready")]
    if current is None:
        gone = f"skipped: {node} is not known to Kubernetes"
        return [of("drain", gone), of("clear-labels", gone), of("agent-locks", gone), *etcd,
                of("shutdown-kubelet", gone, False)]
    if past_clear_labels(current) and not params.fenced:
        earlier = (f"skipped: an earlier decommission of {node} got past it "
                   f"({DECOMMISSION_LABEL}=enabled)")
        stopped = "" if current.ready == "True" else \
            f"skipped: the kubelet of {node} is already stopped (Ready={current.ready})"
        return [of("drain", earlier), of("clear-labels", earlier), of("agent-locks", earlier),
                *etcd, of("shutdown-kubelet", stopped, False)]
    return [of("fence") if params.fenced else of("drain"), of("clear-labels"),
            of("agent-locks"), *etcd,
            of("shutdown-kubelet", f"skipped: {node} is powered off" if params.fenced else "",
               False)]


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


def decommission(svc: Promenade, node: str, clusters: list[ClusterSpec],
                 params: DecommissionParams, design_nodes: Collection[str] = (), *,
                 journal: Journal | None = None, started: float | None = None,
                 alive: Callable[[], bool] = lambda: True) -> list[Message]:
    """Run every phase in order (phase_engine); a failing phase (but the kubelet's) stops
    with 500. With a `journal`, a phase it has an outcome for is not run again, and each
    attempt's start is kept before its effect and its outcome after; `started`: when the
    run began (cancellations); `alive`: the run is still this process's (stuck attempts)."""
    journal = journal or NoJournal(svc.wall)
    known = node in design_nodes or any(
        node in c.members or node in c.members.values() for c in clusters)
    current = current_node(svc, node, params.fenced, known)
    cancel = Cancellation(svc.kube, node, svc.wall() if started is None else started)
    ctx = PhaseContext(svc, node, clusters, params, cancel)
    env = Env(node, svc.clock, svc.sleep, alive, svc.on_stuck)
    messages = run_phases(phases(node, current, params), ctx, journal, env)
    LOG.info("decommission %s: done", node)
    return messages


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
