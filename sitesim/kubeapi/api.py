"""Generic REST operations on stored objects: get, list, create, replace, patch, delete."""

from __future__ import annotations

import base64
import binascii
import copy
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi import admission, pods
from sitesim.kubeapi.errors import KubeBadRequest, KubeGone, not_found
from sitesim.kubeapi.patch import apply_patch
from sitesim.kubeapi.resources import BY_GROUP_PLURAL, ResourceType
from sitesim.kubeapi.selectors import (
    fields_match,
    matches,
    parse_field_selector,
    parse_label_selector,
)

if TYPE_CHECKING:
    from sitesim.kubeapi.state import ClusterState as KubeCluster

Obj = dict[str, Any]
NAMESPACES = BY_GROUP_PLURAL[("", "namespaces")]
# (resource, verb) -> the op name counted through the site hooks
COUNTED_OPS = {
    ("nodes", "get"): "get_node", ("nodes", "list"): "list_nodes",
    ("nodes", "patch"): "patch_node", ("nodes", "update"): "update_node",
    ("nodes", "delete"): "delete_node", ("nodes", "create"): "create_node",
    ("pods", "get"): "get_pod", ("pods", "list"): "list_pods",
    ("pods", "delete"): "delete_pod", ("pods", "create"): "create_pod",
    ("pods", "patch"): "patch_pod", ("leases", "create"): "create_lease",
    ("leases", "update"): "update_lease", ("leases", "delete"): "delete_lease",
    ("leases", "get"): "get_lease", ("leases", "patch"): "patch_lease",
}


@dataclass(frozen=True)
class ListQuery:
    """The query parameters of a list call."""

    label_selector: str | None = None
    field_selector: str | None = None
    limit: int | None = None
    continue_token: str | None = None


def _encode_continue(rv: int, last: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(last)})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        start = data["start"]
        return str(start[0]), str(start[1])
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise KubeBadRequest("continue key is not valid: " + str(exc)) from exc


class ObjectApi:
    """The verbs of the Kubernetes API over the cluster's store."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.store = cluster.store

    def _count(self, res: ResourceType, verb: str, node: str | None) -> None:
        """Report the call to the site (never under the cluster lock: the site has its own)."""
        op = COUNTED_OPS.get((res.plural, verb))
        if op is not None:
            self.cluster.hooks.record_call("kube", op, node)

    def _count_item(self, res: ResourceType, verb: str, ns: str, name: str) -> None:
        if (res.plural, verb) not in COUNTED_OPS:
            return
        node: str | None = None
        if res.plural == "nodes":
            node = name
        elif res.plural == "pods":
            with self.store.lock:
                pod = self.store.peek(res, ns, name)
                node = str((pod or {}).get("spec", {}).get("nodeName") or "") or None
        self._count(res, verb, node)

    def _check_namespace(self, res: ResourceType, ns: str | None) -> None:
        if res.namespaced and ns and self.store.peek(NAMESPACES, "", ns) is None:
            raise not_found("namespaces", ns)

    def get(self, res: ResourceType, ns: str | None, name: str) -> Obj:
        self._count_item(res, "get", ns or "", name)
        return self.store.get(res, ns or "", name)

    def list(self, res: ResourceType, ns: str | None, query: ListQuery) -> Obj:
        """A <Kind>List honouring selectors and paging (limit / continue)."""
        labels = parse_label_selector(query.label_selector)
        fields = parse_field_selector(query.field_selector, res.plural)
        node = next((f.value for f in fields if f.field == "spec.nodeName" and not f.negate),
                    None)
        start = _decode_continue(query.continue_token) if query.continue_token else None
        self._count(res, "list", node if res.plural == "pods" else None)
        with self.store.lock:
            rv = self.store.resource_version
            selected = []
            for obj in self.store.iter(res, ns):
                meta = obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                if start is not None and key <= start:
                    continue
                if matches(labels, meta.get("labels")) and fields_match(fields, obj, res.plural):
                    selected.append(obj)
            items = selected[: query.limit] if query.limit and query.limit > 0 else selected
            list_meta: Obj = {"resourceVersion": str(rv)}
            if len(items) < len(selected):
                last = items[-1]["metadata"]
                list_meta["continue"] = _encode_continue(
                    rv, (last.get("namespace", ""), last["name"]))
                list_meta["remainingItemCount"] = len(selected) - len(items)
            return {"kind": res.kind + "List", "apiVersion": res.api_version,
                    "metadata": list_meta, "items": copy.deepcopy(items)}

    def create(self, res: ResourceType, ns: str | None, body: Any) -> Obj:
        admission.validate_meta(res, body, ns)
        node = (body.get("spec") or {}).get("nodeName") if res.plural == "pods" else None
        self._count(res, "create", body["metadata"]["name"] if res.plural == "nodes" else node)
        with self.store.lock:
            self._check_namespace(res, body["metadata"].get("namespace"))
            body["metadata"].pop("resourceVersion", None)
            if res.plural in admission.STATUS_SUBRESOURCE and res.plural != "nodes":
                body.pop("status", None)  # status is the controllers' to write
            admission.default(res, body, self.cluster.now())
            if res.plural == "pods":
                pods.on_create(self.cluster, body)
            return self.store.create(res, body)

    def replace(self, res: ResourceType, ns: str | None, name: str, body: Any,
                subresource: str | None = None) -> Obj:
        admission.validate_meta(res, body, ns)
        if body["metadata"]["name"] != name:
            raise KubeBadRequest("the name of the object does not match the name on the URL")
        self._count_item(res, "update", ns or "", name)
        with self.store.lock:
            current = self.store.get(res, ns or "", name)
            return self._store_update(res, current, body, subresource)

    def patch(self, res: ResourceType, ns: str | None, name: str, patch: Any,
              content_type: str, subresource: str | None = None) -> Obj:
        self._count_item(res, "patch", ns or "", name)
        with self.store.lock:
            current = self.store.get(res, ns or "", name)
            patched = apply_patch(current, patch, content_type)
            admission.validate_meta(res, patched, ns)
            if patched["metadata"].get("name") != name:
                raise KubeBadRequest("a patch cannot change the object's name")
            return self._store_update(res, current, patched, subresource)

    def _store_update(self, res: ResourceType, current: Obj, new: Obj,
                      subresource: str | None) -> Obj:
        merged = admission.merge_for_update(res, current, new, subresource)
        if subresource is None:
            admission.default(res, merged, self.cluster.now())
        return self.store.replace(res, merged)

    def delete(self, res: ResourceType, ns: str | None, name: str,
               grace: int | None = None) -> Obj:
        """Delete an object; a pod on a node terminates gracefully (see `pods`)."""
        self._count_item(res, "delete", ns or "", name)
        with self.store.lock:
            if res.plural == "pods":
                return pods.delete_pod(self.cluster, self.store.get(res, ns or "", name), grace)
            obj = self.store.delete(res, ns or "", name)
            if res.plural == "namespaces":
                self._delete_namespace_content(name)
            return obj

    def _delete_namespace_content(self, ns: str) -> None:
        for res in BY_GROUP_PLURAL.values():
            if res.namespaced:
                for obj in list(self.store.iter(res, ns)):
                    self.store.delete(res, ns, obj["metadata"]["name"])

    def check_watch_start(self, rv: int) -> None:
        """A watch from a resourceVersion older than the event history is 410 Gone."""
        oldest = self.store.oldest_event_rv()
        if rv and oldest and rv < oldest - 1:
            raise KubeGone(f"too old resource version: {rv} ({oldest})")
