"""The site's etcd clusters following the nodes: power, `etcd.member_down`, and the etcd label."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from sitesim.etcd.cluster import EtcdCluster, EtcdError
from sitesim.model import SiteModel
from sitesim.siteconfig import EtcdClusterSpec, FaultSpec

LOG = logging.getLogger(__name__)


class EtcdManager:
    """Starts the clusters; stops a member when its node powers off or a fault says so, and
    brings a removed member back when its node regains the etcd label (the anchor's job)."""

    def __init__(self, model: SiteModel, workdir: Path) -> None:
        self._model = model
        self._specs: dict[str, EtcdClusterSpec] = {c.name: c for c in model.spec.etcd}
        self.clusters: dict[str, EtcdCluster] = {
            c.name: EtcdCluster(c.name, list(c.members), workdir) for c in model.spec.etcd}
        self._lock = threading.RLock()  # one membership change at a time

    def start(self) -> None:
        started: list[EtcdCluster] = []
        try:
            for cluster in self.clusters.values():
                cluster.start()
                started.append(cluster)
        except EtcdError:
            for cluster in started + [c for c in self.clusters.values() if c not in started]:
                cluster.stop()
            raise
        self._model.etcd_members = self.memberships
        self._model.on_power_change(self._on_power)
        self._model.on_fault_change(self._on_fault)
        for fault in self._model.spec.faults:
            self._on_fault(fault)

    def stop(self) -> None:
        for cluster in self.clusters.values():
            cluster.stop()

    def memberships(self) -> dict[str, list[dict[str, str]]]:
        out: dict[str, list[dict[str, str]]] = {}
        for cluster in self.clusters.values():
            for name in cluster.member_names():
                out.setdefault(name, []).append({"cluster": cluster.name, "member": name})
        return out

    def _clusters_of(self, node: str) -> list[EtcdCluster]:
        return [c for c in self.clusters.values() if node in c.members]

    def stop_member(self, node: str) -> None:
        with self._lock:
            for cluster in self._clusters_of(node):
                self._model.record_call("etcd", "member_stop", node)
                cluster.stop_member(node)

    def _on_power(self, node: str, on: bool) -> None:
        if not on:
            self._in_background(self.stop_member, node)
        elif self._clusters_of(node):
            self._model.scheduler.call_later(self._model.spec.timings.kube_ready,
                                             lambda: self._labels_check(node))

    def _labels_check(self, node: str) -> None:
        kube = self._model.kube
        summary = kube.node_summary(node) if kube is not None else None
        if summary and summary.get("present"):
            self.on_node_labels(node, summary.get("labels") or {})

    def _on_fault(self, fault: FaultSpec | None) -> None:
        if fault is None:
            self._in_background(self._restart_all)
        elif fault.operation == "etcd.member_down":
            self._in_background(self.stop_member, fault.node)

    def _restart_all(self) -> None:
        with self._lock:
            self._restart_stopped()

    def _restart_stopped(self) -> None:
        for cluster in self.clusters.values():
            for node, member in cluster.members.items():
                if not member.running and self._model.is_on(node) \
                        and node in cluster.member_names():
                    self._model.record_call("etcd", "member_restart", node)
                    cluster.restart_member(node)

    def on_node_labels(self, node: str, labels: Mapping[str, str]) -> None:
        """Kubernetes callback: a node with the etcd label gets its member back."""
        for cluster in self._clusters_of(node):
            key, value = self._specs[cluster.name].label
            if labels.get(key) == value and self._model.is_on(node) \
                    and self._model.fault("etcd.member_down", node) is None:
                self._in_background(self.ensure_member, cluster, node)

    def ensure_member(self, cluster: EtcdCluster, node: str) -> None:
        """The node's etcd: restarted when still a member; started on a fresh data dir once
        someone (Promenade's join-etcd) added it, as a learner; after `etcd_self_join`
        seconds unlisted, it adds itself as a voter (what older anchors did)."""
        deadline = time.monotonic() + self._model.spec.timings.etcd_self_join
        while True:
            with self._lock:
                if self._bring_back(cluster, node, time.monotonic() >= deadline):
                    return
            time.sleep(0.2)

    def _bring_back(self, cluster: EtcdCluster, node: str, self_join: bool) -> bool:
        """True when done (or failed for good); False to look again later."""
        if cluster.members[node].running:
            return True
        try:
            # Looked at twice: Promenade may add the node (as a learner, never started) just
            # after the first look; restarting it on its old data dir would then fail.
            if cluster.start_added_member(node) or (
                    node in cluster.member_names() and cluster.start_added_member(node)):
                self._model.record_call("etcd", "member_join", node)
            elif node in cluster.member_names():
                self._model.record_call("etcd", "member_restart", node)
                cluster.restart_member(node)
            elif self_join:
                self._model.record_call("etcd", "member_add", node)
                cluster.readd_member(node)
            else:
                return False
        except EtcdError:
            LOG.exception("could not bring etcd member %s of %s back", node, cluster.name)
        return True

    @staticmethod
    def _in_background(fn: object, *args: object) -> None:
        threading.Thread(target=fn, args=args, daemon=True).start()  # type: ignore[arg-type]

    def pids(self) -> list[int]:
        return [pid for c in self.clusters.values() for pid in c.pids()]
