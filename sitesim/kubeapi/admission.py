"""Per-kind defaulting and validation applied before an object is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sitesim.kubeapi import factories
from sitesim.kubeapi.errors import KubeBadRequest, KubeInvalid
from sitesim.kubeapi.resources import ResourceType
from sitesim.kubeapi.selectors import label_selector_from_object, matches

Obj = dict[str, Any]

# Kinds whose status is a subresource: writes to the main resource keep the stored status.
STATUS_SUBRESOURCE = {"nodes", "pods", "namespaces", "daemonsets", "replicasets", "deployments",
                      "statefulsets", "poddisruptionbudgets"}


def validate_meta(res: ResourceType, obj: Obj, namespace: str | None) -> None:
    """Check kind/apiVersion/name/namespace; fills the namespace from the URL."""
    problems = []
    if not isinstance(obj, dict):
        raise KubeInvalid(f"{res.kind}: the body must be a JSON object")
    if obj.get("kind") not in (None, res.kind):
        problems.append(f"kind: Invalid value: {obj.get('kind')!r}: must be {res.kind}")
    if obj.get("apiVersion") not in (None, res.api_version):
        problems.append(f"apiVersion: Invalid value: {obj.get('apiVersion')!r}: "
                        f"must be {res.api_version}")
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise KubeInvalid(f"{res.kind}: metadata must be an object")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = str(meta["generateName"]) + _suffix(obj)
    if not meta.get("name"):
        problems.append("metadata.name: Required value: name or generateName is required")
    if res.namespaced:
        given = meta.get("namespace")
        if namespace and given and given != namespace:
            raise KubeBadRequest("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
        meta["namespace"] = namespace or given or "default"
    else:
        meta.pop("namespace", None)
    if problems:
        raise KubeInvalid(f'{res.kind} "{meta.get("name", "")}" is invalid: ' + "; ".join(problems),
                          kind=res.kind, name=str(meta.get("name", "")),
                          causes=[{"reason": "FieldValueInvalid", "message": p} for p in problems])
    obj["apiVersion"], obj["kind"] = res.api_version, res.kind


def _suffix(obj: Obj) -> str:
    import secrets
    return "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def _check_workload(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    selector = label_selector_from_object(spec.get("selector"))
    if selector is None or not selector:
        raise KubeInvalid(f'{obj["kind"]} "{obj["metadata"]["name"]}" is invalid: '
                          "spec.selector: Required value")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not matches(selector, labels):
        raise KubeInvalid(f'{obj["kind"]} "{obj["metadata"]["name"]}" is invalid: '
                          "spec.template.metadata.labels: Invalid value: "
                          "`selector` does not match template `labels`")
    factories.default_pod_spec(template.setdefault("spec", {}))


def _default_daemonset(obj: Obj, now: str) -> None:
    _check_workload(obj)
    obj["spec"].setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 1, "maxSurge": 0}})
    obj["spec"].setdefault("revisionHistoryLimit", 10)
    obj.setdefault("status", {"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                              "numberMisscheduled": 0, "numberReady": 0})


def _default_replicated(obj: Obj, now: str) -> None:
    _check_workload(obj)
    obj["spec"].setdefault("replicas", 1)
    obj.setdefault("status", {"replicas": 0})


def _default_deployment(obj: Obj, now: str) -> None:
    _default_replicated(obj, now)
    obj["spec"].setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "25%", "maxSurge": "25%"}})


def _default_statefulset(obj: Obj, now: str) -> None:
    _default_replicated(obj, now)
    obj["spec"].setdefault("serviceName", obj["metadata"]["name"])
    obj["spec"].setdefault("podManagementPolicy", "OrderedReady")


def _default_pdb(obj: Obj, now: str) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        raise KubeInvalid(f'PodDisruptionBudget "{obj["metadata"]["name"]}" is invalid: '
                          "spec: minAvailable and maxUnavailable cannot be both set")
    for field in ("minAvailable", "maxUnavailable"):
        value = spec.get(field)
        if value is not None and not _int_or_percent(value):
            raise KubeInvalid(f'PodDisruptionBudget "{obj["metadata"]["name"]}" is invalid: '
                              f"spec.{field}: Invalid value: {value!r}")
    obj.setdefault("status", {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0,
                              "expectedPods": 0, "observedGeneration": 0})


def _int_or_percent(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and value.endswith("%") and value[:-1].isdigit()


def _default_pod(obj: Obj, now: str) -> None:
    factories.default_pod_spec(obj.setdefault("spec", {}))
    obj.setdefault("status", factories.pending_pod_status(now))


def _default_node(obj: Obj, now: str) -> None:
    factories.complete_node(obj, now)


def _default_namespace(obj: Obj, now: str) -> None:
    obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    obj["status"] = {"phase": "Active"}
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"][
        "name"]


def _default_lease(obj: Obj, now: str) -> None:
    obj.setdefault("spec", {})


DEFAULTERS: dict[str, Callable[[Obj, str], None]] = {
    "pods": _default_pod,
    "nodes": _default_node,
    "namespaces": _default_namespace,
    "daemonsets": _default_daemonset,
    "replicasets": _default_replicated,
    "deployments": _default_deployment,
    "statefulsets": _default_statefulset,
    "poddisruptionbudgets": _default_pdb,
    "leases": _default_lease,
}


def default(res: ResourceType, obj: Obj, now: str) -> None:
    """Apply the kind's defaults (and validation) to a new or replaced object."""
    DEFAULTERS[res.plural](obj, now)


def merge_for_update(res: ResourceType, current: Obj, new: Obj, subresource: str | None) -> Obj:
    """What is stored after a PUT/PATCH: status comes from the status subresource only."""
    if res.plural not in STATUS_SUBRESOURCE:
        return new
    if subresource == "status":
        merged = dict(current)
        merged["status"] = new.get("status", current.get("status"))
        meta = dict(current["metadata"])
        if new.get("metadata", {}).get("resourceVersion"):
            meta["resourceVersion"] = new["metadata"]["resourceVersion"]
        merged["metadata"] = meta
        return merged
    new = dict(new)
    if "status" in current:
        new["status"] = current["status"]
    meta = new.setdefault("metadata", {})
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if field in current["metadata"]:
            meta[field] = current["metadata"][field]
    return new
