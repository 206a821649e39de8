"""`as=Table` renderings (meta.k8s.io/v1 Table) for kubectl get."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sitesim.kubeapi.factories import CONTROL_PLANE_LABEL, node_ready_status

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj, float], Any]]


def wants_table(accept: str) -> bool:
    """kubectl asks `application/json;as=Table;v=v1;g=meta.k8s.io`."""
    first = accept.split(",")[0] if accept else ""
    return "as=Table" in first


def age(obj: Obj, now: float) -> str:
    """A duration like kubectl prints: 45s, 12m, 5h, 3d."""
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    seconds = max(0, int(now - created))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _node_status(node: Obj, now: float) -> str:
    ready = node_ready_status(node)
    status = "Ready" if ready == "True" else "NotReady" if ready == "False" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _roles(node: Obj, now: float) -> str:
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    return ",".join(roles) or ("control-plane" if CONTROL_PLANE_LABEL in labels else "<none>")


def _internal_ip(node: Obj, now: float) -> str:
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return str(addr.get("address"))
    return "<none>"


def _pod_ready(pod: Obj, now: float) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len(pod["spec"].get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(pod: Obj, now: float) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _name(obj: Obj, now: float) -> str:
    return str(obj["metadata"]["name"])


COLUMNS: dict[str, list[Column]] = {
    "nodes": [
        ("Name", "string", 0, _name), ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _roles), ("Age", "string", 0, age),
        ("Version", "string", 0,
         lambda o, n: o["status"]["nodeInfo"]["kubeletVersion"]),
        ("Internal-IP", "string", 1, _internal_ip),
        ("External-IP", "string", 1, lambda o, n: "<none>"),
        ("OS-Image", "string", 1, lambda o, n: o["status"]["nodeInfo"]["osImage"]),
        ("Kernel-Version", "string", 1, lambda o, n: o["status"]["nodeInfo"]["kernelVersion"]),
        ("Container-Runtime", "string", 1,
         lambda o, n: o["status"]["nodeInfo"]["containerRuntimeVersion"]),
    ],
    "pods": [
        ("Name", "string", 0, _name), ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status), ("Restarts", "string", 0, lambda o, n: "0"),
        ("Age", "string", 0, age),
        ("IP", "string", 1, lambda o, n: (o.get("status") or {}).get("podIP") or "<none>"),
        ("Node", "string", 1, lambda o, n: o["spec"].get("nodeName") or "<none>"),
    ],
}


def _status(field: str, default: Any = 0) -> Callable[[Obj, float], Any]:
    return lambda o, n: (o.get("status") or {}).get(field, default)


def _spec(field: str, default: Any = "N/A") -> Callable[[Obj, float], Any]:
    return lambda o, n: (o.get("spec") or {}).get(field, default)


def _ready_of(o: Obj, n: float) -> str:
    status = o.get("status") or {}
    return f"{status.get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 1)}"


COLUMNS.update({
    "daemonsets": [
        ("Name", "string", 0, _name), ("Desired", "integer", 0,
                                       _status("desiredNumberScheduled")),
        ("Current", "integer", 0, _status("currentNumberScheduled")),
        ("Ready", "integer", 0, _status("numberReady")),
        ("Up-to-date", "integer", 0, _status("updatedNumberScheduled")),
        ("Available", "integer", 0, _status("numberAvailable")),
        ("Node Selector", "string", 0, lambda o, n: ",".join(
            f"{k}={v}" for k, v in ((o["spec"]["template"].get("spec") or {})
                                    .get("nodeSelector") or {}).items()) or "<none>"),
        ("Age", "string", 0, age),
    ],
    "deployments": [
        ("Name", "string", 0, _name), ("Ready", "string", 0, _ready_of),
        ("Up-to-date", "integer", 0, _status("updatedReplicas")),
        ("Available", "integer", 0, _status("availableReplicas")), ("Age", "string", 0, age),
    ],
    "replicasets": [
        ("Name", "string", 0, _name), ("Desired", "integer", 0, _spec("replicas", 1)),
        ("Current", "integer", 0, _status("replicas")),
        ("Ready", "integer", 0, _status("readyReplicas")), ("Age", "string", 0, age),
    ],
    "statefulsets": [
        ("Name", "string", 0, _name), ("Ready", "string", 0, _ready_of),
        ("Age", "string", 0, age),
    ],
    "poddisruptionbudgets": [
        ("Name", "string", 0, _name), ("Min Available", "string", 0, _spec("minAvailable")),
        ("Max Unavailable", "string", 0, _spec("maxUnavailable")),
        ("Allowed Disruptions", "integer", 0, _status("disruptionsAllowed")),
        ("Age", "string", 0, age),
    ],
    "leases": [
        ("Name", "string", 0, _name), ("Holder", "string", 0, lambda o, n: (
            o.get("spec") or {}).get("holderIdentity", "")), ("Age", "string", 0, age),
    ],
    "namespaces": [
        ("Name", "string", 0, _name), ("Status", "string", 0, _status("phase", "Active")),
        ("Age", "string", 0, age),
    ],
})
DEFAULT_COLUMNS: list[Column] = [("Name", "string", 0, _name), ("Age", "string", 0, age)]


def _row_object(obj: Obj, include: str) -> Obj:
    if include == "Object":
        return obj
    if include == "None":
        return {}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"]}


def to_table(resource: str, items: list[Obj], list_meta: Obj, now: float,
             include_object: str = "Metadata") -> Obj:
    """A Table of `items` with the columns kubectl shows for `resource`."""
    columns = COLUMNS.get(resource, DEFAULT_COLUMNS)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": name, "type": kind, "format": "name" if name == "Name" else "",
             "description": name, "priority": priority}
            for name, kind, priority, _ in columns
        ],
        "rows": [{"cells": [get(obj, now) for _, _, _, get in columns],
                  "object": _row_object(obj, include_object)} for obj in items],
    }
