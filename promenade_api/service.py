"""Promenade's operations, wired from config: what the resources call (no falcon here)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from oslo_config import cfg

from common.clients.promenade import NodeView, ready_status
from common.context import RequestContext, current_marker
from common.disruption import Leave
from common.documents import Document, select
from common.errors import BerthError, NotFound
from common.jsontypes import JSON
from common.status import Message, simple_message
from promenade_api.errors import (
    ClearLabelsError,
    DeleteNodeError,
    DrainNodeError,
    RemoveEtcdError,
    ShutdownKubeletError,
)
from promenade_api.etcd.design import SCHEMA, clusters_of_node, load_clusters, validate_design
from promenade_api.etcd.joining import EtcdJoiner
from promenade_api.etcd.model import ClusterSpec
from promenade_api.etcd.port import EtcdError, EtcdPort
from promenade_api.etcd.removal import EtcdRemover
from promenade_api.kube.agents import AgentsGone, AgentWaiter
from promenade_api.kube.drain import Drainer, DrainReport, DrainSettings, held_locks, plan_drain
from promenade_api.kube.fence import Fenced, Fencer
from promenade_api.kube.kubelet import KubeletStopped, KubeletStopper
from promenade_api.kube.labels import LabelManager, LabelsCleared, LabelsReplaced
from promenade_api.kube.lease import LeaseLock
from promenade_api.kube.port import KubeApiError, KubeNotFound, KubePort
from promenade_api.kube.progress import PROGRESS_ANNOTATION, DrainProgress, encode, parse
from promenade_api.kube.removal import NodeRemoved, remove_from_cluster
from promenade_api.kube.taints import TaintSweeper

NODE_SCHEMA = "drydock/BaremetalNode/v1"


@contextmanager
def step_errors(cls: type[BerthError], what: str) -> Iterator[None]:
    """Kubernetes/etcd failures of an operation become its spec reason (404 stays 404)."""
    try:
        yield
    except KubeNotFound:
        raise
    except (KubeApiError, EtcdError) as exc:
        raise cls(f"{what}: {exc.message}", messages=[simple_message(exc.message)]) from exc


def _pair(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.strip(), value.strip()


@dataclass(frozen=True)
class Settings:
    """Every tunable of the node operations (from config, or given by tests)."""

    drain: DrainSettings = field(default_factory=DrainSettings)
    drain_timeout: int = 3600
    drain_grace_period: int = 1800
    keep_labels: tuple[str, ...] = ()
    clear_labels_timeout: int = 1800
    clear_labels_poll: float = 2.0
    etcd_poll: float = 30.0
    etcd_ready_timeout: int = 600
    remove_etcd_timeout: int = 1800
    join_etcd_timeout: int = 600
    learner_max_lag: int = 10
    join_poll: float = 1.0
    lease_namespace: str = "kube-system"
    lease_duration: int = 60
    lease_poll: float = 1.0
    kubelet_timeout: int = 300
    kubelet_poll: float = 2.0
    kubelet_pod_label: tuple[str, str] = ("application", "kubelet-shutdown")
    taint_deadline: float = 3600.0  # Berth's out-of-service taint goes at the latest then
    taint_sweep_interval: float = 60.0  # 0: no periodic sweep (reads still clean up)
    service_roles: tuple[str, ...] = ("service",)  # callers that pass on an operator
    decommission_attempt_timeout: float = 0.0  # a phase attempt running longer is stuck (0: off)


def settings_from_conf(conf: cfg.ConfigOpts) -> Settings:
    d = conf.drain
    return Settings(
        drain=DrainSettings(
            retry_delay=d.eviction_retry_delay, maintenance_label=_pair(d.maintenance_label),
            lock_patterns=tuple(d.eviction_lock_patterns),
            lock_poll_interval=d.lock_poll_interval,
            daemonset_like_kinds=tuple(d.daemonset_like_kinds), parallelism=d.parallelism,
            hold_annotation=d.hold_annotation,
            agent_lock_patterns=tuple(d.agent_lock_patterns),
            agent_pod_labels=tuple(_pair(x) for x in d.agent_pod_labels),
            agent_maintenance_labels=tuple(_pair(x) for x in d.agent_maintenance_labels)),
        drain_timeout=d.default_timeout, drain_grace_period=d.default_grace_period,
        keep_labels=tuple(conf.clear_labels.keep),
        clear_labels_timeout=conf.clear_labels.default_timeout,
        clear_labels_poll=conf.clear_labels.poll_interval,
        etcd_poll=conf.etcd.poll_interval, etcd_ready_timeout=conf.etcd.ready_timeout,
        remove_etcd_timeout=conf.etcd.remove_timeout,
        join_etcd_timeout=conf.etcd.join_timeout, learner_max_lag=conf.etcd.learner_max_lag,
        join_poll=conf.etcd.join_poll_interval,
        lease_namespace=conf.kubernetes.lease_namespace,
        lease_duration=conf.etcd.lease_duration, lease_poll=conf.kubernetes.poll_interval,
        kubelet_timeout=conf.kubelet.shutdown_timeout, kubelet_poll=conf.kubelet.poll_interval,
        kubelet_pod_label=_pair(conf.kubelet.shutdown_pod_label),
        taint_deadline=conf.fence.taint_deadline,
        taint_sweep_interval=conf.fence.sweep_interval,
        service_roles=tuple(conf.auth.service_roles),
        decommission_attempt_timeout=conf.decommission.attempt_timeout)


class DesignSource(Protocol):
    """Where designs come from: common.designref.DesignResolver, or a test's own."""

    def resolve(self, ref: JSON, ctx: RequestContext | None = None) -> list[Document]: ...


class Promenade:
    """The node operations of the teardown spec over a KubePort and an EtcdPort."""

    def __init__(self, kube: KubePort, etcd: EtcdPort, resolver: DesignSource,
                 settings: Settings, *, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 observe: Callable[[str, str, float], None] | None = None,
                 on_stuck: Callable[[str], None] | None = None) -> None:
        self.kube, self.etcd, self.resolver, self.settings = kube, etcd, resolver, settings
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self.observe = observe
        self.on_stuck = on_stuck  # told the phase of each stuck decommission attempt

    @contextmanager
    def timed(self, operation: str) -> Iterator[None]:
        """Report the operation's duration and outcome (ok or error) to `observe`."""
        started, outcome = self.clock(), "error"
        try:
            yield
            outcome = "ok"
        finally:
            if self.observe is not None:
                self.observe(operation, outcome, self.clock() - started)

    # -- collaborators -----------------------------------------------------------------
    def drainer(self, check: Callable[[], None] = lambda: None) -> Drainer:
        return Drainer(self.kube, self.settings.drain, clock=self.clock, sleep=self.sleep,
                       check=check, progress=self.drain_progress, wall=self.wall)

    def drain_progress(self, node: str) -> DrainProgress:
        """Progress of a drain of `node`, published on the Node for every process to read;
        it carries the caller's context marker, so Shipyard knows its own drain's record."""
        def publish(record: Mapping[str, object]) -> None:
            self.kube.patch_node(node, annotations={PROGRESS_ANNOTATION: encode(record)})

        return DrainProgress(node, current_marker.get(), self.wall(), self.wall, publish)

    def taint_sweeper(self) -> TaintSweeper:
        """Removes Berth's out-of-service taints once due (node Ready, or deadline)."""
        return TaintSweeper(self.kube, self.wall)

    def labels(self) -> LabelManager:
        return LabelManager(self.kube, self.settings.keep_labels, clock=self.clock,
                            sleep=self.sleep, poll_interval=self.settings.clear_labels_poll,
                            agent=self.settings.drain.is_agent)

    def _etcd_lock(self, cluster: str) -> LeaseLock:
        """One Lease per etcd cluster serialises every membership change (join and remove)."""
        s = self.settings
        return LeaseLock(self.kube, s.lease_namespace, f"berth-etcd-{cluster}",
                         duration=s.lease_duration, wall=self.wall, sleep=self.sleep,
                         poll_interval=s.lease_poll)

    def remover(self) -> EtcdRemover:
        return EtcdRemover(self.etcd, self._etcd_lock, clock=self.clock, sleep=self.sleep,
                           poll_interval=self.settings.etcd_poll)

    def joiner(self) -> EtcdJoiner:
        return EtcdJoiner(self.etcd, self._etcd_lock, clock=self.clock, sleep=self.sleep,
                          poll_interval=self.settings.join_poll,
                          max_lag=self.settings.learner_max_lag)

    def design(self, ref: JSON, ctx: RequestContext | None) -> list[Document]:
        docs: list[Document] = self.resolver.resolve(ref, ctx)
        return docs

    def clusters(self, ref: JSON, ctx: RequestContext | None, *,
                 required: bool = True) -> list[ClusterSpec]:
        """The design's etcd clusters; without the document: 404, or none when not required."""
        return _clusters_of(self.design(ref, ctx), required)

    def decommission_inputs(self, ref: JSON, ctx: RequestContext | None
                            ) -> tuple[list[ClusterSpec], set[str]]:
        """The design's etcd clusters (none without the document) and its node names."""
        docs = self.design(ref, ctx)
        names = {str(d["metadata"]["name"]) for d in select(docs, NODE_SCHEMA)}
        return _clusters_of(docs, required=False), names

    # -- operations ----------------------------------------------------------------------
    def drain(self, node: str, timeout: int | None, grace: int | None,
              check: Callable[[], None] = lambda: None, leave: Leave | None = None,
              operator: str = "") -> DrainReport:
        """`leave`: `operator`'s leave to delete the pods of the named budgets that still
        refuse their eviction after `leave.after` seconds of refusals (nothing else)."""
        with self.timed("drain"), step_errors(DrainNodeError, f"Drain of {node} failed"):
            return self.drainer(check).run(
                node, self.settings.drain_timeout if timeout is None else timeout,
                self.settings.drain_grace_period if grace is None else grace, leave, operator)

    def fence(self, node: str, timeout: int, check: Callable[[], None]) -> Fenced:
        """Remove the pods of a node whose power-off was confirmed (out-of-service taint)."""
        fencer = Fencer(self.kube, clock=self.clock, sleep=self.sleep,
                        poll_interval=self.settings.kubelet_poll, check=check,
                        progress=self.drain_progress,
                        signal=self.settings.drain.signal_labels(), wall=self.wall,
                        taint_deadline=self.settings.taint_deadline)
        with self.timed("fence"), step_errors(DrainNodeError, f"Fencing {node} failed"):
            return fencer.run(node, timeout)

    def await_agents(self, node: str, timeout: int | None,
                     check: Callable[[], None] = lambda: None) -> AgentsGone:
        """Wait for the node's per-node agents to be removed and their locks released."""
        waiter = AgentWaiter(self.kube, self.settings.drain, clock=self.clock,
                             sleep=self.sleep, check=check)
        with self.timed("agent_locks"), step_errors(
                DrainNodeError, f"Waiting for the agents of {node} failed"):
            return waiter.wait(node, self.settings.drain_timeout if timeout is None
                               else timeout)

    def clear_labels(self, node: str, timeout: int | None) -> LabelsCleared:
        with self.timed("clear_labels"), step_errors(ClearLabelsError,
                                                     f"Clearing the labels of {node} failed"):
            return self.labels().clear(node, self.settings.clear_labels_timeout
                                       if timeout is None else timeout)

    def put_labels(self, node: str, labels: JSON) -> LabelsReplaced:
        return self.labels().replace(node, labels)

    def remove_etcd(self, node: str, clusters: list[ClusterSpec], timeout: int | None, *,
                    require_node: bool = True) -> list[Message]:
        if require_node and not clusters_of_node(clusters, node):
            self._require_node(node)
        with self.timed("remove_etcd"), step_errors(
                RemoveEtcdError, f"Removing the etcd members of {node} failed"):
            return self.remover().remove_node(node, clusters, self.settings.remove_etcd_timeout
                                              if timeout is None else timeout)

    def join_etcd(self, node: str, clusters: list[ClusterSpec],
                  timeout: int | None) -> list[Message]:
        """The node's members back as learners, each promoted once in sync with the leader."""
        if not clusters_of_node(clusters, node):
            self._require_node(node)
        with self.timed("join_etcd"):
            return self.joiner().join_node(node, clusters, self.settings.join_etcd_timeout
                                           if timeout is None else timeout)

    def etcd_health(self, clusters: list[ClusterSpec]) -> list[Message]:
        return self.remover().health_messages(clusters)

    def shutdown_kubelet(self, node: str, timeout: int | None = None) -> KubeletStopped:
        stopper = KubeletStopper(self.kube, pod_label=self.settings.kubelet_pod_label,
                                 clock=self.clock, sleep=self.sleep,
                                 poll_interval=self.settings.kubelet_poll)
        with self.timed("shutdown_kubelet"), step_errors(
                ShutdownKubeletError, f"Shutting down the kubelet of {node} failed"):
            return stopper.shutdown(node, self.settings.kubelet_timeout if timeout is None
                                    else timeout)

    def remove_from_cluster(self, node: str) -> NodeRemoved:
        with self.timed("remove_from_cluster"), step_errors(
                DeleteNodeError, f"Removing {node} from the cluster failed"):
            return remove_from_cluster(self.kube, node, self.settings.drain)

    def validate_design(self, ref: JSON, ctx: RequestContext | None) -> list[Message]:
        return validate_design(self.design(ref, ctx))

    def _require_node(self, node: str) -> None:
        try:
            self.kube.get_node(node)
        except KubeNotFound as exc:
            raise NotFound(f"Node {node} is not known to Kubernetes") from exc

    def node_version(self, node: str) -> str:
        """The Node object's resourceVersion (404 when Kubernetes does not know the node)."""
        try:
            return self.kube.get_node(node).version
        except KubeNotFound as exc:
            raise NotFound(f"Node {node} is not known to Kubernetes") from exc

    def node_view(self, node: str, clusters: list[ClusterSpec] | None = None) -> NodeView:
        """The operator's view: labels, cordon, pods by owner kind, locks, etcd memberships."""
        try:
            current = self.taint_sweeper().check(self.kube.get_node(node))
        except KubeNotFound as exc:
            raise NotFound(f"Node {node} is not known to Kubernetes") from exc
        pods = self.kube.list_pods(node)
        by_kind: dict[str, list[str]] = {}
        for pod in pods:
            kind = "Mirror" if pod.is_mirror else (pod.controller.kind if pod.controller
                                                   else "Unmanaged")
            by_kind.setdefault(kind, []).append(pod.key)
        plan = plan_drain(pods, self.settings.drain, lambda ns, name: True)
        return {
            "name": node, "labels": current.labels, "annotations": current.annotations,
            "cordoned": current.unschedulable,
            "kubelet": {"ready": ready_status(current.ready), "ready_since": current.ready_since},
            "taints": list(current.taints),
            "pods": {"total": len(pods), "by_owner_kind": by_kind,
                     "evictable": sorted(p.key for p in plan.evict + plan.hold)},
            "eviction_locks": held_locks(current.annotations,
                                         (*self.settings.drain.lock_patterns,
                                          *self.settings.drain.agent_lock_patterns)),
            "etcd": [{"cluster": c.name, "member": m} for c in clusters or []
                     for m, n in sorted(c.members.items()) if n == node],
            "drain_progress": parse(current.annotations),
        }


def _clusters_of(docs: list[Document], required: bool) -> list[ClusterSpec]:
    """The documents' etcd clusters; without the EtcdClusters document: 404, or none when not
    required."""
    if not required and not select(docs, SCHEMA):
        return []
    return load_clusters(docs)
