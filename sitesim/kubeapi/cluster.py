"""The simulated cluster: object store, per-node kubelet state, timers and the public API."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from sitesim.hooks import SiteHooks
from sitesim.kubeapi import factories
from sitesim.kubeapi.api import ObjectApi
from sitesim.kubeapi.errors import KubeBadRequest
from sitesim.kubeapi.resources import BY_GROUP_PLURAL, for_manifest
from sitesim.kubeapi.state import KubeTimings, NodeSim, Timers
from sitesim.kubeapi.store import Event, Store, iso_now

Obj = dict[str, Any]
NODES = BY_GROUP_PLURAL[("", "nodes")]
NAMESPACES = BY_GROUP_PLURAL[("", "namespaces")]
DECOMMISSION_LABEL = "promenade-decomission"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class KubeCluster:
    """An in-memory Kubernetes cluster with a simulated kubelet and controllers."""

    def __init__(self, hooks: SiteHooks, timings: KubeTimings | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, watch_history: int = 5000) -> None:
        self.hooks = hooks
        self.timings = timings or KubeTimings()
        self.clock = clock
        self.wall = wall
        self.store = Store(wall, history=watch_history)
        self.lock = self.store.lock
        self.nodes: dict[str, NodeSim] = {}
        self.timers = Timers()
        self.api = ObjectApi(self)
        self.kick = threading.Event()
        self.stopping = threading.Event()
        self._label_callbacks: list[Callable[[str, dict[str, str]], None]] = []
        self._known_labels: dict[str, dict[str, str]] = {}
        self._pending_labels: list[tuple[str, dict[str, str]]] = []
        self._thread: threading.Thread | None = None
        self.store.add_listener(self._on_event)
        for ns in SYSTEM_NAMESPACES:
            self.store.create(NAMESPACES, {"metadata": {"name": ns, "labels": {
                "kubernetes.io/metadata.name": ns}}, "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}})

    def now(self) -> str:
        """The current wall-clock time as a Kubernetes timestamp."""
        return iso_now(self.wall)

    # -- change notification -------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        self.kick.set()
        if event.resource != "nodes":
            return
        name = event.obj["metadata"]["name"]
        if event.type == "DELETED":
            self._known_labels.pop(name, None)
            return
        labels = dict(event.obj["metadata"].get("labels") or {})
        if self._known_labels.get(name) != labels:
            self._known_labels[name] = labels
            self._pending_labels.append((name, labels))

    def on_node_labels(self, callback: Callable[[str, dict[str, str]], None]) -> None:
        """Call `callback(node, labels)` after a node's labels change (or a node appears).

        Callbacks run on the controller thread (started by `start()`), holding no lock, so
        they may call back into the site or this cluster; `flush_callbacks()` runs pending
        ones at once (for use without the controllers).
        """
        self._label_callbacks.append(callback)

    def flush_callbacks(self) -> None:
        """Run label callbacks queued by changes (never while holding the lock)."""
        with self.lock:
            pending, self._pending_labels = self._pending_labels, []
        for name, labels in pending:
            for callback in list(self._label_callbacks):
                callback(name, dict(labels))

    # -- public API used by the site ------------------------------------------------------
    def add_node(self, name: str, labels: dict[str, str], *, ready: bool = True,
                 control_plane: bool = False, address: str | None = None) -> None:
        """Register a node (as its kubelet would), or refresh its labels and readiness."""
        with self.lock:
            sim = self.nodes.get(name)
            if sim is None or self.store.peek(NODES, "", name) is None:
                sim = NodeSim(address=address or f"10.23.0.{len(self.nodes) % 250 + 2}",
                              shutdown_enabled=sim.shutdown_enabled if sim else True)
                self.nodes[name] = sim
            sim.ready, sim.kubelet_running = ready, True
            sim.shutdown_at = sim.unknown_at = None
            current = self.store.peek(NODES, "", name)
            if current is None:
                self.store.create(NODES, factories.node_object(
                    name, labels, control_plane=control_plane,
                    ready="True" if ready else "Unknown", address=sim.address, now=self.now()))
            else:
                node = copy.deepcopy(current)
                node["metadata"]["labels"] = factories.node_labels(
                    name, labels, control_plane=control_plane)
                self.store.replace(NODES, node, check_rv=False)
            self.sync_node_ready(name)

    def remove_node(self, name: str) -> None:
        """Delete the Node object (its pods are garbage-collected)."""
        with self.lock:
            if self.store.peek(NODES, "", name) is not None:
                self.store.delete(NODES, "", name)

    def set_ready(self, name: str, ready: bool) -> None:
        """Model the node's kubelet being up (Ready True) or gone (Ready Unknown)."""
        with self.lock:
            sim = self.nodes.get(name)
            if sim is None:
                return
            sim.ready = ready
            if ready:
                sim.kubelet_running, sim.shutdown_at, sim.unknown_at = True, None, None
            self.sync_node_ready(name)

    def set_kubelet_shutdown_enabled(self, name: str, enabled: bool) -> None:
        """When disabled, the kubelet-shutdown DaemonSet never stops this node's kubelet."""
        with self.lock:
            sim = self.nodes.setdefault(name, NodeSim(address="10.23.0.254"))
            sim.shutdown_enabled = enabled
            if not enabled:
                sim.shutdown_at = None
            self.kick.set()

    def node_summary(self, name: str) -> dict[str, Any] | None:
        """`{"present", "ready", "unschedulable", "labels"}` for the site's observation API."""
        with self.lock:
            node = self.store.peek(NODES, "", name)
            if node is None:
                return {"present": False, "ready": False, "unschedulable": False, "labels": {}}
            return {
                "present": True,
                "ready": factories.node_ready_status(node) == "True",
                "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
                "labels": dict(node["metadata"].get("labels") or {}),
            }

    def apply(self, obj: Obj) -> Obj:
        """Create or replace any supported object from a manifest dict."""
        res = for_manifest(str(obj.get("apiVersion")), str(obj.get("kind")))
        if res is None:
            raise KubeBadRequest(f"unsupported manifest {obj.get('apiVersion')}/{obj.get('kind')}")
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        with self.lock:
            if res.namespaced:
                ns = meta.setdefault("namespace", "default")
                if self.store.peek(NAMESPACES, "", ns) is None:
                    self.api.create(NAMESPACES, None, {"metadata": {"name": ns}})
            current = self.store.peek(res, meta.get("namespace", ""), str(meta.get("name")))
            if current is None:
                result = self.api.create(res, meta.get("namespace"), body)
            else:
                meta.pop("resourceVersion", None)
                result = self.api.replace(res, meta.get("namespace"), meta["name"], body)
        return result

    # -- kubelet state -----------------------------------------------------------------------
    def node_ready_target(self, name: str) -> str:
        """The Ready status the node should show now: True, or Unknown once it is gone."""
        sim = self.nodes.get(name)
        if sim is None:
            return "True"
        if not sim.ready:
            return "Unknown"
        if not sim.kubelet_running and sim.unknown_at is not None \
                and self.clock() >= sim.unknown_at:
            return "Unknown"
        return "True"

    def sync_node_ready(self, name: str) -> None:
        """Write the node's Ready condition if it differs from what the kubelet state says."""
        node = self.store.peek(NODES, "", name)
        if node is None:
            return
        target = self.node_ready_target(name)
        if factories.node_ready_status(node) == target:
            return
        updated = copy.deepcopy(node)
        updated["status"]["conditions"] = factories.node_conditions(target, self.now())
        self.store.replace(NODES, updated, check_rv=False)

    def node_is_schedulable(self, node: Obj) -> bool:
        """Ready and not cordoned."""
        return (factories.node_ready_status(node) == "True"
                and not (node.get("spec") or {}).get("unschedulable"))

    # -- controllers ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the background thread running the simulated kubelet and controllers."""
        from sitesim.kubeapi.controllers import run_controllers

        if self._thread is not None:
            return
        self.stopping.clear()
        self._thread = threading.Thread(target=run_controllers, args=(self,),
                                        name="kube-controllers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the controllers (and end open watches)."""
        self.stopping.set()
        self.kick.set()
        with self.lock:
            self.store.changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

