"""The `kube.eviction` fault on the real cluster, as a sick host or a site policy makes it:

- `hang`: the node's kubelet never confirms that a pod stopped, so an evicted pod stays
  Terminating (the pods carry the annotation kwok's pod-delete stage waits on) until the
  fault is cleared;
- `fail`: the site's admission policy refuses every eviction of the node's pods (a
  ValidatingAdmissionPolicy naming them), answered by the real apiserver.

Both apply to the pods on the node when the fault is set, and to pods placed there later."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sitesim.kube.workloads import STUCK_ANNOTATION

if TYPE_CHECKING:
    from sitesim.kube.sitekube import SiteKube

POLICY = "sitesim-eviction-fault"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


class EvictionFaults:
    """Keeps the cluster in line with the site's `kube.eviction` faults."""

    def __init__(self, kube: SiteKube, faults: Callable[[], list[dict[str, str]]]) -> None:
        self.kube = kube
        self.faults = faults
        self._lock = threading.Lock()
        self._refused: set[str] = set()  # namespace/name of pods whose eviction is refused
        self._marked = False  # some pod may still carry the annotation

    def apply(self) -> None:
        """Mark the pods of every faulted node, unmark the others (called on each fault change
        and periodically; nothing to do, and no request, while no such fault was ever set)."""
        with self._lock:
            hung, failed = self._nodes("hang"), self._nodes("fail")
            if not (hung or failed or self._marked or self._refused):
                return
            self._marked = bool(hung)
            refused: set[str] = set()
            for pod in self._pods():
                meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
                stuck = STUCK_ANNOTATION in (meta.get("annotations") or {})
                if (node in hung) != stuck:
                    self._annotate(meta, "true" if node in hung else None)
                if node in failed:
                    refused.add(f"{meta['namespace']}/{meta['name']}")
            if refused != self._refused:
                self._set_policy(refused)
                self._refused = refused

    def _nodes(self, effect: str) -> set[str]:
        return {f["node"] for f in self.faults()
                if f["operation"] == "kube.eviction" and f["effect"] == effect}

    def _pods(self) -> list[dict[str, Any]]:
        found = self.kube.api.get("/api/v1/pods") or {}
        return list(found.get("items") or [])

    def _annotate(self, meta: dict[str, Any], value: str | None) -> None:
        self.kube.api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                            {"metadata": {"annotations": {STUCK_ANNOTATION: value}}})

    def _set_policy(self, refused: set[str]) -> None:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            self.kube.api.call("DELETE", f"{ADMISSION}/{kind}/{POLICY}", ok=(200, 404))
        if not refused:
            return
        keys = json.dumps(sorted(refused))
        self.kube.apply([
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
             "metadata": {"name": POLICY},
             "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
                 {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["pods/eviction"]}]},
                 "validations": [{
                     "expression": f"!((request.namespace + '/' + request.name) in {keys})",
                     "message": "eviction refused: injected fault on the pod's node"}]}},
            {"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": POLICY},
             "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}])
