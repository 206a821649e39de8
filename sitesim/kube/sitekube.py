"""The simulated site's Kubernetes: a real control plane (sitesim.kube.controlplane) whose
kubelets (kwok) follow the servers' power, plus what the hosts themselves do on it.

A server's kubelet runs while its Node carries kwok's label: the site adds it when a
deployed server is powered on and removes it when the server goes off or its
kubelet-shutdown pod has run. Everything else (NotReady/Unknown, taints, pod eviction and
garbage collection, rescheduling, PDB status) is the real controllers' work; Berth learns it
through the Kubernetes API only."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from common.httpclient import DROPPED_GET, retrying_session
from sitesim.hooks import SiteHooks
from sitesim.kube import workloads
from sitesim.kube.controlplane import KWOK_LABEL, KWOK_VALUE, ControlPlane, kwok_node

LOG = logging.getLogger(__name__)
Obj = dict[str, Any]
LabelListener = Callable[[str, dict[str, str]], None]
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
MIRRORED_COMPONENTS = ("kube-apiserver", "kube-scheduler")
DEPLOY_BASE = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "base"
RBAC_KINDS = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
              "RoleBinding"}
WATCH_SECONDS = 30
TOKEN_SECONDS = 10 * 365 * 86400  # the site lives as long as `berth up` runs
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_EVENTS = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"  # a watch


# What the site counts of the API's traffic, as the simulators count the calls they receive:
# every write of Promenade's ServiceAccount, and Node deletions by anyone. The apiserver's
# audit log records them; the site reads it.
PROMENADE_USER = "system:serviceaccount:berth:promenade"
WRITES = ["create", "update", "patch", "delete", "deletecollection"]
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "users": [PROMENADE_USER], "verbs": WRITES},
              {"level": "Metadata", "verbs": ["delete", "deletecollection"],
               "resources": [{"group": "", "resources": ["nodes"]}]},
              {"level": "None"}]}
# (verb, resource, subresource) -> the operation the site counts (the object's name as node)
AUDIT_OPERATIONS = {
    ("delete", "nodes", ""): "delete_node", ("deletecollection", "nodes", ""): "delete_nodes",
    ("patch", "nodes", ""): "patch_node", ("update", "nodes", ""): "patch_node",
    ("create", "pods", "eviction"): "eviction", ("delete", "pods", ""): "delete_pod",
    ("create", "leases", ""): "create_lease", ("update", "leases", ""): "update_lease",
    ("patch", "leases", ""): "update_lease", ("delete", "leases", ""): "delete_lease",
}


def audit_args(directory: Path) -> list[str]:
    """The apiserver's flags for the site's audit log in `directory` (policy written there)."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    return [f"--audit-policy-file={policy}", f"--audit-log-path={directory / 'audit.log'}",
            "--audit-log-format=json", "--audit-log-mode=blocking"]


class KubeSiteError(Exception):
    """The apiserver refused or failed a request of the site's own."""


@dataclass(frozen=True)
class HostTimings:
    """What the hosts take, in seconds: the kubelet-shutdown pod's script, and how often the
    site looks at the cluster (node labels for etcd, kubelet-shutdown pods)."""

    kubelet_shutdown_delay: float = 0.5
    poll_interval: float = 0.5


class AdminClient:
    """The apiserver as the site's admin (client certificate), over plain REST."""

    def __init__(self, plane: ControlPlane) -> None:
        self.base = plane.server
        # a GET on a connection the apiserver closed as idle is sent again
        self.session = retrying_session(DROPPED_GET)
        self.session.cert = (str(plane.pki.admin_cert), str(plane.pki.admin_key))
        self.session.verify = str(plane.pki.ca_cert)
        self.session.trust_env = False  # no proxy or CA bundle from the environment

    def call(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200,),
             content_type: str = "application/json", accept: str = "application/json"
             ) -> requests.Response:
        reply = self.session.request(method, self.base + path, json=body, timeout=30,
                                     headers={"Content-Type": content_type, "Accept": accept})
        if reply.status_code not in ok:
            raise KubeSiteError(f"{method} {path}: {reply.status_code} {reply.text[:300]}")
        return reply

    def get(self, path: str) -> Obj | None:
        reply = self.call("GET", path, ok=(200, 404))
        return None if reply.status_code == 404 else dict(reply.json())

    def patch(self, path: str, body: Obj) -> bool:
        """A JSON merge patch; False when the object is gone."""
        reply = self.call("PATCH", path, body, ok=(200, 404),
                          content_type="application/merge-patch+json")
        return reply.status_code == 200


def node_ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def summarize_node(node: Obj | None) -> dict[str, Any]:
    """`{"present", "ready", "unschedulable", "labels", "kubelet"}` of a Node (None: absent)."""
    if node is None:
        return {"present": False, "ready": False, "unschedulable": False, "labels": {},
                "kubelet": False}
    labels = dict(node["metadata"].get("labels") or {})
    return {"present": True, "ready": node_ready(node),
            "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
            "labels": labels, "kubelet": labels.get(KWOK_LABEL) == KWOK_VALUE}


class SiteKube:
    """The site's KubePort on a running control plane; `start()` begins watching the hosts'
    side (node labels for etcd, kubelet-shutdown pods), `stop()` ends that and the plane."""

    def __init__(self, plane: ControlPlane, hooks: SiteHooks,
                 timings: HostTimings = HostTimings(), audit_log: Path | None = None) -> None:
        self.plane = plane
        self.hooks = hooks
        self.timings = timings
        self.api = AdminClient(plane)
        self.url = plane.server
        self._listeners: list[LabelListener] = []
        self._labels: dict[str, dict[str, str]] = {}
        self._shutdown_disabled: set[str] = set()
        self._shutdown_seen: dict[str, float] = {}
        self._mirrors = False
        self.lease_namespace = "berth"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ticks: list[Callable[[], None]] = []
        self._audit_log, self._audit_offset = audit_log, 0

    # --- the site's KubePort -----------------------------------------------------------------
    def add_node(self, name: str, labels: dict[str, str], *, ready: bool = True,
                 control_plane: bool = False) -> None:
        """Register the Node as its kubelet does (kwok:// providerID); `ready` starts its
        kubelet at once, else `set_ready(name, True)` does later."""
        all_labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **labels}
        if control_plane:
            all_labels[CONTROL_PLANE_LABEL] = ""
        body = kwok_node(name, all_labels)
        if not ready:
            del body["metadata"]["labels"][KWOK_LABEL]
        reply = self.api.call("POST", "/api/v1/nodes", body, ok=(201, 409))
        if reply.status_code == 409:
            self.api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": all_labels}})
            self.set_ready(name, ready)
        if control_plane and self._mirrors:
            self._post_mirror_pods(name)

    def set_ready(self, name: str, ready: bool) -> None:
        """Start (kwok's label on) or stop (off) the node's kubelet; Ready follows from
        kwok's heartbeats and the node-lifecycle controller."""
        value = KWOK_VALUE if ready else None
        self.api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {KWOK_LABEL: value}}})

    def node_summary(self, name: str) -> dict[str, Any]:
        """`{"present", "ready", "unschedulable", "labels", "kubelet"}` for the observation API."""
        return summarize_node(self.api.get(f"/api/v1/nodes/{name}"))

    def node_summaries(self) -> dict[str, dict[str, Any]]:
        """`node_summary` of every Node present, from one list of the Nodes (the observation
        API's listing of a site of thousands)."""
        items = self.api.call("GET", "/api/v1/nodes").json().get("items") or []
        return {node["metadata"]["name"]: summarize_node(node) for node in items}

    def remove_node(self, name: str) -> None:
        """Delete the Node object (its pods are then garbage-collected by the controllers)."""
        self.api.call("DELETE", f"/api/v1/nodes/{name}", ok=(200, 404))

    def on_node_labels(self, listener: LabelListener) -> None:
        """Call `listener(node, labels)` when a node appears or its labels change."""
        self._listeners.append(listener)

    def on_tick(self, callback: Callable[[], None]) -> None:
        """Call `callback()` on each pass of the hosts' loop (poll_interval)."""
        self._ticks.append(callback)

    def set_kubelet_shutdown_enabled(self, name: str, enabled: bool) -> None:
        """When disabled, the node's kubelet-shutdown pod never stops its kubelet."""
        (self._shutdown_disabled.discard if enabled else self._shutdown_disabled.add)(name)

    # --- workloads ---------------------------------------------------------------------------
    def apply(self, objects: list[Obj]) -> None:
        """Create or update the objects with the built kubectl (server-side apply)."""
        self.plane.kubectl("apply", "--server-side", "--force-conflicts",
                           "--field-manager=sitesim", "-f", "-",
                           stdin="\n".join(json.dumps(o) for o in objects))

    def seed_infrastructure(self) -> None:
        """What every site runs, workloads or not: the kubelet-shutdown DaemonSet (Promenade's
        kubelet shutdown relies on it, as on an Airship site)."""
        self.apply([workloads.kubelet_shutdown_daemonset()])

    def seed_workloads(self, control: list[str], compute: list[str]) -> None:
        """The demo workloads, and the mirror pods of every control-plane node's static pods."""
        self.apply(workloads.demo_workloads(compute))
        self._mirrors = True
        for name in control:
            self._post_mirror_pods(name)

    def _post_mirror_pods(self, node: str) -> None:
        current = self.api.get(f"/api/v1/nodes/{node}")
        if current is None:
            return
        for component in MIRRORED_COMPONENTS:
            pod = workloads.mirror_pod(node, current["metadata"]["uid"], component)
            self.api.call("POST", "/api/v1/namespaces/kube-system/pods", pod, ok=(201, 409))

    # --- Promenade's identity --------------------------------------------------------------
    def promenade_kubeconfig(self, path: Path) -> str:
        """Apply the RBAC Berth ships (deploy/kubernetes/base, rendered by kustomize) and write
        a kubeconfig of its `promenade` ServiceAccount's token at `path`; returns Berth's
        namespace (where its Role grants the Leases)."""
        rendered = self.plane.kubectl("kustomize", str(DEPLOY_BASE))
        rbac = [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") in RBAC_KINDS]
        namespace = next(d["metadata"]["name"] for d in rbac if d["kind"] == "Namespace")
        self.apply(rbac)
        token = self.plane.service_account_token(namespace, "promenade", TOKEN_SECONDS)
        self.plane.token_kubeconfig(path, token)
        return str(namespace)

    # --- the hosts' side ---------------------------------------------------------------------
    def start(self) -> None:
        for target, name in ((self._watch_nodes, "sitesim-kube-nodes"),
                             (self._run_hosts, "sitesim-kube-hosts")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self.plane.stop()

    def _run_hosts(self) -> None:
        while not self._stop.wait(self.timings.poll_interval):
            try:
                self._count_writes()
                self._run_kubelet_shutdowns()
                for tick in self._ticks:
                    tick()
            except (KubeSiteError, requests.RequestException) as exc:
                LOG.warning("site kube: %s", exc)

    def _watch_nodes(self) -> None:
        """List, then watch the Nodes' metadata; every label change goes to the listeners."""
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    version = self._list_nodes()
                version = self._watch_nodes_from(version)
            except (KubeSiteError, requests.RequestException, ValueError) as exc:
                if not self._stop.is_set():
                    LOG.info("site kube: node watch restarts: %s", exc)
                    version = ""
                    self._stop.wait(self.timings.poll_interval)

    def _list_nodes(self) -> str:
        reply = self.api.call("GET", "/api/v1/nodes", accept=METADATA_ONLY).json()
        names = set()
        for item in reply.get("items") or []:
            names.add(item["metadata"]["name"])
            self._node_labels(item["metadata"])
        for gone in set(self._labels) - names:
            self._labels.pop(gone, None)
        return str(reply["metadata"]["resourceVersion"])

    def _watch_nodes_from(self, version: str) -> str:
        """One watch request (ends after WATCH_SECONDS); the version to go on from, or ""
        when the server says it is too old (then the caller lists again)."""
        path = (f"/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion={version}"
                f"&timeoutSeconds={WATCH_SECONDS}")
        with self.api.session.get(self.api.base + path, stream=True,
                                  timeout=(10, WATCH_SECONDS + 10),
                                  headers={"Accept": METADATA_EVENTS}) as reply:
            if reply.status_code != 200:
                raise KubeSiteError(f"watch of nodes: {reply.status_code}")
            for line in reply.iter_lines():
                if self._stop.is_set():
                    break
                if not line:
                    continue
                event = json.loads(line)
                meta = (event.get("object") or {}).get("metadata") or {}
                if event.get("type") == "ERROR":
                    return ""
                version = str(meta.get("resourceVersion") or version)
                if event.get("type") == "DELETED":
                    self._labels.pop(meta.get("name", ""), None)
                elif event.get("type") in ("ADDED", "MODIFIED"):
                    self._node_labels(meta)
        return version

    def _node_labels(self, meta: Obj) -> None:
        name, labels = meta["name"], dict(meta.get("labels") or {})
        if self._labels.get(name) == labels:
            return
        self._labels[name] = labels
        for listener in list(self._listeners):
            try:
                listener(name, labels)
            except Exception:  # one listener's failure must not stop the others
                LOG.exception("node label listener failed for %s", name)

    def _count_writes(self) -> None:
        """Count each audited write the apiserver answered with success."""
        if self._audit_log is None or not self._audit_log.exists():
            return
        with self._audit_log.open("rb") as log:
            log.seek(self._audit_offset)
            lines = log.read().split(b"\n")
        self._audit_offset += sum(len(line) + 1 for line in lines[:-1])
        for line in lines[:-1]:
            event = json.loads(line)
            if (event.get("responseStatus") or {}).get("code", 0) >= 300:
                continue
            ref = event.get("objectRef") or {}
            key = (event.get("verb"), ref.get("resource"), ref.get("subresource") or "")
            operation = AUDIT_OPERATIONS.get(key)  # type: ignore[arg-type]
            if operation is not None:
                node = ref.get("name") if ref.get("resource") == "nodes" else None
                self.hooks.record_call("kube", operation, node)

    def _run_kubelet_shutdowns(self) -> None:
        """A running kubelet-shutdown pod's script finishes, then its host's kubelet stops."""
        reply = self.api.call(
            "GET", f"/api/v1/pods?labelSelector=application%3D{workloads.KUBELET_SHUTDOWN}")
        now = time.monotonic()
        for pod in reply.json().get("items") or []:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            node = spec.get("nodeName") or ""
            if not node or meta.get("deletionTimestamp") \
                    or (pod.get("status") or {}).get("phase") != "Running" \
                    or node in self._shutdown_disabled \
                    or self.hooks.fault("kube.kubelet_shutdown", node) is not None:
                continue
            started = self._shutdown_seen.setdefault(meta["uid"], now)
            if started == now:
                self.hooks.record_operation("kube", "kubelet_shutdown", node,
                                            self.timings.kubelet_shutdown_delay)
            if now - started < self.timings.kubelet_shutdown_delay:
                continue
            self._complete(pod)
            self.set_ready(node, False)
            self.hooks.record_call("kube", "kubelet_stopped", node)

    def _complete(self, pod: Obj) -> None:
        meta = pod["metadata"]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        statuses = [{"name": c["name"], "image": c.get("image", ""), "ready": False,
                     "restartCount": 0, "imageID": "", "started": False,
                     "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                              "startedAt": stamp, "finishedAt": stamp}}}
                    for c in pod["spec"]["containers"]]
        self.api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                       {"status": {"phase": "Succeeded", "containerStatuses": statuses}})
