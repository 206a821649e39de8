"""The kubelet-shutdown pod's life and the drained pods' termination as the Kubernetes API
records them, for the redeploy bench.

Promenade labels the node; from then on the DaemonSet controller creates the pod, the
scheduler binds it and the node's kubelet (kwok) starts it: the site's control plane at work,
not Berth's. Before that, Promenade's drain evicts the node's pods: from the moment a pod is
marked for deletion (its deletionTimestamp) to its removal, the node's kubelet is terminating
it, also the site's work. The bench watches the API itself (the node, the kubelet-shutdown
pods and the node's pods) and stamps each event as it arrives; the objects' own timestamps
(creationTimestamp, the conditions' lastTransitionTime) are kept beside them, though they are
whole seconds only.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

LABEL = "promenade-decomission"
POD_SELECTOR = "application=kubelet-shutdown"


def stamp(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def condition_time(pod: dict[str, Any], kind: str) -> float | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return stamp(cond.get("lastTransitionTime"))
    return None


def pod_node(pod: dict[str, Any]) -> str:
    """The node a DaemonSet pod is for: its nodeName once bound, before that its affinity."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
             .get("nodeSelectorTerms") or [])
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


class KubePods:
    """Watches `node` and the kubelet-shutdown pods through the admin kubeconfig; `ops()`
    gives the site's intervals of the node's first pod: label set -> pod created (the
    DaemonSet controller), created -> bound (the scheduler), bound -> Running (the kubelet),
    Running -> Succeeded (the pod's script and the kubelet stopping)."""

    def __init__(self, kubeconfig: str, node: str) -> None:
        config = json.loads(Path(kubeconfig).read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        self._base, self._node = cluster["server"], node
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.verify = cluster.get("certificate-authority", True)
        if "client-certificate" in user:
            self._session.cert = (user["client-certificate"], user["client-key"])
        elif "token" in user:
            self._session.headers["Authorization"] = f"Bearer {user['token']}"
        self._stop = threading.Event()
        self.label_seen: float | None = None
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> first-seen times and the object's
        self.terminating: dict[str, dict[str, Any]] = {}  # uid -> name, marked, removed
        self._threads = [threading.Thread(target=self._watch, args=args, daemon=True) for args in (
            ("/api/v1/nodes", f"fieldSelector=metadata.name%3D{node}", self._on_node),
            ("/api/v1/pods", f"labelSelector={POD_SELECTOR}", self._on_pod),
            ("/api/v1/pods", f"fieldSelector=spec.nodeName%3D{node}", self._on_node_pod))]

    def __enter__(self) -> KubePods:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)

    def _watch(self, path: str, query: str, handle: Any) -> None:
        listed = self._session.get(f"{self._base}{path}?{query}", timeout=10).json()
        version = listed["metadata"]["resourceVersion"]
        for item in listed.get("items") or []:
            handle(item, time.time(), "LIST")
        while not self._stop.is_set():
            url = (f"{self._base}{path}?{query}&watch=true&timeoutSeconds=1"
                   f"&resourceVersion={version}")
            try:
                with self._session.get(url, stream=True, timeout=10) as resp:
                    for line in resp.iter_lines():
                        if not line:
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            break
                        version = obj["metadata"]["resourceVersion"]
                        handle(obj, time.time(), str(event.get("type")))
            except (requests.RequestException, ValueError):
                time.sleep(0.05)

    def _on_node(self, node: dict[str, Any], now: float, kind: str) -> None:
        labelled = (node["metadata"].get("labels") or {}).get(LABEL) == "enabled"
        if labelled and self.label_seen is None and kind != "LIST":
            self.label_seen = now

    def _on_pod(self, pod: dict[str, Any], now: float, kind: str) -> None:
        meta = pod["metadata"]
        if kind == "ADDED" and pod_node(pod) == self._node:
            self.pods.setdefault(meta["uid"], {"name": meta["name"], "created": now})
        seen = self.pods.get(meta["uid"])
        if seen is None or kind == "DELETED":
            return
        if (pod.get("spec") or {}).get("nodeName"):
            seen.setdefault("bound", now)
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded"):
            seen.setdefault("running", now)
        if phase == "Succeeded":
            seen.setdefault("succeeded", now)
        seen["api"] = {"creationTimestamp": stamp(meta.get("creationTimestamp")),
                       "PodScheduled": condition_time(pod, "PodScheduled"),
                       "Ready": condition_time(pod, "Ready"),
                       "startTime": stamp((pod.get("status") or {}).get("startTime"))}

    def _on_node_pod(self, pod: dict[str, Any], now: float, kind: str) -> None:
        meta = pod["metadata"]
        if (meta.get("labels") or {}).get("application") == "kubelet-shutdown" or kind == "LIST":
            return
        if meta.get("deletionTimestamp") or kind == "DELETED":
            seen = self.terminating.setdefault(meta["uid"], {"name": meta["name"],
                                                             "marked": now})
            if kind == "DELETED":
                seen.setdefault("removed", now)

    def drained(self) -> list[dict[str, Any]]:
        """Each pod the drain evicted (marked for deletion before the node was labelled for
        the kubelet shutdown), from its mark to its removal, as a site operation."""
        return [{"system": "kube", "op": "pod_terminates", "start": seen["marked"],
                 "end": seen["removed"]} for seen in self.terminating.values()
                if "removed" in seen
                and (self.label_seen is None or seen["marked"] < self.label_seen)]

    def ops(self) -> list[dict[str, Any]]:
        """The intervals above as site operations (system "kube")."""
        out: list[dict[str, Any]] = []
        # The first pod only: once it succeeded the DaemonSet controller makes another for the
        # still-labelled node, off the critical path (the kubelet has stopped by then).
        for seen in sorted(self.pods.values(), key=lambda p: float(p["created"]))[:1]:
            marks = [("label", self.label_seen), ("created", seen.get("created")),
                     ("bound", seen.get("bound")), ("running", seen.get("running")),
                     ("succeeded", seen.get("succeeded"))]
            names = {"created": "daemonset_creates_pod", "bound": "scheduler_binds_pod",
                     "running": "kubelet_starts_pod", "succeeded": "shutdown_pod_runs"}
            last = None
            for mark, when in marks:
                if when is None:
                    continue
                if last is not None and mark in names and when >= last:
                    out.append({"system": "kube", "op": names[mark], "start": last, "end": when})
                last = when
        return out

    def describe(self, start: float) -> list[str]:
        """One line per pod: the watch's times and the API's own (s from `start`)."""
        def rel(t: float | None) -> str:
            return f"{t - start:7.2f}" if t is not None else "      -"
        lines = [f"  node labelled {LABEL}=enabled (watch): {rel(self.label_seen)}"]
        for seen in self.pods.values():
            api = seen.get("api") or {}
            lines.append(
                f"  pod {seen['name']}: watch created {rel(seen.get('created'))}, bound "
                f"{rel(seen.get('bound'))}, running {rel(seen.get('running'))}, succeeded "
                f"{rel(seen.get('succeeded'))}; API creationTimestamp "
                f"{rel(api.get('creationTimestamp'))}, PodScheduled "
                f"{rel(api.get('PodScheduled'))}, Ready {rel(api.get('Ready'))} (whole seconds)")
        return lines
