"""KubePort over the official `kubernetes` client; its exceptions are translated here."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTResponse
from kubernetes.watch.watch import iter_resp_lines

from common.nodenames import require_name
from common.poll import NotYet, poll
from common.urlpath import node_path, object_path
from promenade_api.kube.budget import Budget
from promenade_api.kube.model import EvictResult, Lease, Node, Obj, Pod
from promenade_api.kube.port import KubeApiError, KubeConflict, KubeNotFound, KubeUnavailable

LOG = logging.getLogger(__name__)
MERGE_PATCH = "application/merge-patch+json"
TAINT_ATTEMPTS = 5  # read-modify-write rounds of a node's taints before a conflict is final
# The Eviction API's 429 names the refusing budget in a cause of this type, e.g. "The
# disruption budget web needs 3 healthy pods and has 3 currently" (eviction.go).
BUDGET_CAUSE = "DisruptionBudget"
_BUDGET_NAME = re.compile(r"^The disruption budget (\S+) ")


def load_api_client(kubeconfig: str = "", api_url: str = "") -> k8s.ApiClient | None:
    """An ApiClient from a kubeconfig file and/or an API URL; None when neither is set."""
    if not kubeconfig and not api_url:
        return None
    configuration = k8s.Configuration()
    configuration.connection_pool_maxsize = 64  # parallel evictions share one pool
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration)
    if api_url:
        configuration.host = api_url.rstrip("/")
    return k8s.ApiClient(configuration)
Query = list[tuple[str, str | int]]  # a request's query parameters, in order
Timeout = float | tuple[float, float] | None  # seconds: total, or (connect, read)


class ApiFailure(Exception):
    """A non-2xx answer: status code and the API's Status message."""

    def __init__(self, status: int, message: str, body: Obj) -> None:
        super().__init__(message)
        self.status, self.message, self.body = status, message, body


def _read(resp: RESTResponse) -> bytes:
    """The response's body; ApiFailure (its Status message) for a status of 300 and up."""
    raw: bytes = resp.read()  # type: ignore[no-untyped-call]
    if resp.status >= 300:
        message, status_body = _status_message(resp.status, raw)
        raise ApiFailure(resp.status, message, status_body)
    return raw


def _status_message(status: int, raw: bytes) -> tuple[str, Obj]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return raw.decode(errors="replace")[:300] or f"HTTP {status}", {}
    return str(body.get("message") or f"HTTP {status}"), body if isinstance(body, dict) else {}


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _node(name: str) -> str:
    """A Node's object path: the name must be a node name and stay one path segment (a `.`
    or `..` would address the collection or the API root)."""
    return node_path("/api/v1/nodes", require_name(name))


def _on_node(node: str) -> str:
    """The field selector of the pods bound to a node (a checked node name)."""
    return f"spec.nodeName={require_name(node)}"


def _parse_iso(value: object) -> float | None:
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()


class KubeClient:
    """The real KubePort: raw JSON over the client's configured HTTP stack (no model checks)."""

    def __init__(self, api_client: k8s.ApiClient | None, request_timeout: float = 30.0,
                 poll_interval: float = 1.0) -> None:
        self._api = api_client
        self._timeout = request_timeout
        self._poll = poll_interval

    @property
    def configured(self) -> bool:
        return self._api is not None

    # -- plumbing ----------------------------------------------------------------------
    def _send(self, method: str, path: str, query: Query | None, body: object,
              content_type: str, timeout: Timeout) -> RESTResponse:
        if self._api is None:
            raise KubeUnavailable("Kubernetes is not configured: set [kubernetes] kubeconfig "
                                  "or api_url (or KUBECONFIG)")
        headers = {"Accept": "application/json", "Content-Type": content_type}
        params = self._api.param_serialize(method=method, resource_path=path,
                                           query_params=query or [], header_params=headers,
                                           body=body, auth_settings=["BearerToken"])
        try:
            resp: RESTResponse = self._api.call_api(*params,
                                                    _request_timeout=timeout or self._timeout)
        except ApiException as exc:
            raise KubeUnavailable(f"Kubernetes API {method} {path} failed: {exc.reason}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeUnavailable(f"Kubernetes API {method} {path} unreachable: {exc}") from exc
        return resp

    def _request(self, method: str, path: str, *, query: Query | None = None,
                 body: object = None, content_type: str = "application/json",
                 timeout: Timeout = None) -> Obj:
        """The answer's JSON object ({} when empty); ApiFailure for a status of 300 and up."""
        raw = _read(self._send(method, path, query, body, content_type, timeout))
        return json.loads(raw) if raw else {}

    def _stream(self, path: str, query: Query, timeout: Timeout) -> urllib3.BaseHTTPResponse:
        """A GET's response left unread (a watch), or ApiFailure as `_request`."""
        resp = self._send("GET", path, query, None, "application/json", timeout)
        if resp.status >= 300:
            _read(resp)
        stream: urllib3.BaseHTTPResponse = resp.response
        return stream

    def _call(self, method: str, path: str, *, query: Query | None = None, body: object = None,
              content_type: str = "application/json") -> Obj:
        """`_request` with API failures translated to our errors."""
        try:
            return self._request(method, path, query=query, body=body,
                                 content_type=content_type)
        except ApiFailure as exc:
            raise translate(exc, f"{method} {path}") from exc

    # -- nodes -------------------------------------------------------------------------
    def ping(self) -> str:
        info = self._call("GET", "/version")
        return str(info.get("gitVersion", "unknown"))

    def get_node(self, name: str) -> Node:
        return Node.from_obj(self._call("GET", _node(name)))

    def patch_node(self, name: str, *, labels: Mapping[str, str | None] | None = None,
                   annotations: Mapping[str, str | None] | None = None,
                   unschedulable: bool | None = None) -> Node:
        patch: Obj = {}
        meta: Obj = {}
        if labels:
            meta["labels"] = dict(labels)
        if annotations:
            meta["annotations"] = dict(annotations)
        if meta:
            patch["metadata"] = meta
        if unschedulable is not None:
            patch["spec"] = {"unschedulable": True if unschedulable else None}
        if not patch:
            return self.get_node(name)
        return Node.from_obj(self._call("PATCH", _node(name), body=patch,
                                        content_type=MERGE_PATCH))

    def add_taint(self, name: str, taint: Mapping[str, str]) -> Node:
        # spec.taints is an atomic list (no patch merge key): any patch of it replaces the
        # whole list. So write the full list, at the resourceVersion it was read from, and
        # read again when another writer (the node-lifecycle controller) came between.
        for _ in range(TAINT_ATTEMPTS - 1):
            try:
                return self._taint_once(name, taint)
            except KubeConflict:
                LOG.info("taint of %s raced another write; reading it again", name)
        return self._taint_once(name, taint)

    def _taint_once(self, name: str, taint: Mapping[str, str]) -> Node:
        current = self._call("GET", _node(name))
        same = (taint.get("key"), taint.get("effect"))
        kept = [t for t in (current.get("spec") or {}).get("taints") or []
                if (t.get("key"), t.get("effect")) != same]
        patch: Obj = {"spec": {"taints": [*kept, dict(taint)]}}
        version = (current.get("metadata") or {}).get("resourceVersion")
        if version:  # a 409 when the taints changed since they were read
            patch["metadata"] = {"resourceVersion": version}
        return Node.from_obj(self._call("PATCH", _node(name), body=patch,
                                        content_type=MERGE_PATCH))

    def remove_taint(self, name: str, key: str, effect: str,
                     annotations: Mapping[str, str | None] | None = None) -> Node:
        for _ in range(TAINT_ATTEMPTS - 1):
            try:
                return self._untaint_once(name, key, effect, annotations)
            except KubeConflict:
                LOG.info("taint removal on %s raced another write; reading it again", name)
        return self._untaint_once(name, key, effect, annotations)

    def _untaint_once(self, name: str, key: str, effect: str,
                      annotations: Mapping[str, str | None] | None) -> Node:
        current = self._call("GET", _node(name))
        kept = [t for t in (current.get("spec") or {}).get("taints") or []
                if (t.get("key"), t.get("effect")) != (key, effect)]
        meta: Obj = {"resourceVersion": (current.get("metadata") or {}).get("resourceVersion")}
        if annotations:
            meta["annotations"] = dict(annotations)
        patch: Obj = {"metadata": {k: v for k, v in meta.items() if v},
                      "spec": {"taints": kept or None}}
        return Node.from_obj(self._call("PATCH", _node(name), body=patch,
                                        content_type=MERGE_PATCH))

    def delete_node(self, name: str) -> None:
        self._call("DELETE", _node(name))

    # -- pods --------------------------------------------------------------------------
    def _list_pods_raw(self, node: str) -> Obj:
        result: Obj = self._call("GET", "/api/v1/pods",
                                 query=[("fieldSelector", _on_node(node))])
        return result

    def list_pods(self, node: str) -> list[Pod]:
        return [Pod.from_obj(p) for p in self._list_pods_raw(node).get("items") or []]

    def list_nodes(self) -> list[Node]:
        return [Node.from_obj(n) for n in self._call("GET", "/api/v1/nodes").get("items") or []]

    def list_all_pods(self) -> list[Pod]:
        return [Pod.from_obj(p) for p in self._call("GET", "/api/v1/pods").get("items") or []]

    def list_budgets(self) -> list[Budget]:
        found = self._call("GET", "/apis/policy/v1/poddisruptionbudgets")
        return [Budget.from_obj(b) for b in found.get("items") or []]

    def owner_exists(self, kind: str, namespace: str, name: str) -> bool:
        daemonsets = object_path("/apis/apps/v1/namespaces", namespace, "/daemonsets")
        path = object_path(daemonsets, name)
        try:
            self._call("GET", path)
        except KubeNotFound:
            return False
        return True

    def evict(self, pod: Pod, grace_period: int | None) -> EvictResult:
        body: Obj = {"apiVersion": "policy/v1", "kind": "Eviction",
                     "metadata": {"name": pod.name, "namespace": pod.namespace}}
        if grace_period is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period,
                                     "preconditions": {"uid": pod.uid}}
        path = _pod(pod) + "/eviction"
        try:
            self._request("POST", path, body=body)
        except ApiFailure as exc:
            return eviction_outcome(exc)
        return EvictResult("evicted")

    def delete_pod(self, pod: Pod, grace_period: int | None) -> EvictResult:
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1",
                     "preconditions": {"uid": pod.uid}}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        path = _pod(pod)
        try:
            self._request("DELETE", path, body=body)
        except ApiFailure as exc:
            if exc.status in (404, 409):  # gone, or a new pod under the same name
                return EvictResult("gone", exc.message)
            return EvictResult("failed", f"HTTP {exc.status}: {exc.message}")
        return EvictResult("evicted")

    def wait_pods_gone(self, node: str, uids: Collection[str], timeout: float) -> set[str]:
        deadline = time.monotonic() + timeout
        listing = self._list_pods_raw(node)
        present = {str(p["metadata"].get("uid")) for p in listing.get("items") or []}
        remaining = set(uids) & present
        rv = str((listing.get("metadata") or {}).get("resourceVersion") or "")
        while remaining and time.monotonic() < deadline:
            left = deadline - time.monotonic()
            try:
                for event in self._watch_pods(node, rv, left):
                    obj = event.get("object") or {}
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if event.get("type") == "DELETED":
                        remaining.discard(str(obj["metadata"].get("uid")))
                    if not remaining or time.monotonic() >= deadline:
                        break
            except (KubeApiError, ApiFailure, urllib3.exceptions.HTTPError, OSError,
                    ValueError) as exc:
                LOG.info("pod watch on %s failed (%s); polling instead", node, exc)
                remaining = self._poll_gone(node, remaining, deadline)
        return remaining

    def watch_node(self, name: str, version: str, timeout: float) -> bool:
        seconds = max(1, int(timeout))
        selector = f"metadata.name={require_name(name)}"
        query: Query = [("fieldSelector", selector), ("watch", "true"),
                                        ("resourceVersion", version),
                                        ("timeoutSeconds", seconds),
                                        ("allowWatchBookmarks", "false")]
        try:
            resp = self._stream("/api/v1/nodes", query, (self._timeout, seconds + 5))
            with contextlib.closing(resp):
                for _ in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                    return True  # any event (an ERROR such as 410 Gone too): look again
        except (KubeApiError, ApiFailure, urllib3.exceptions.HTTPError, OSError,
                ValueError) as exc:
            LOG.info("node watch on %s failed (%s); waiting instead", name, exc)
            time.sleep(min(self._poll, timeout))
            return True
        return False

    def watch_budgets(self, namespace: str | None, version: str, timeout: float,
                      wake: Callable[[Budget], bool]) -> str:
        path = "/apis/policy/v1/poddisruptionbudgets" if namespace is None else object_path(
            "/apis/policy/v1/namespaces", namespace, "/poddisruptionbudgets")
        deadline = time.monotonic() + timeout
        query: Query = [("watch", "true"), ("allowWatchBookmarks", "false"),
                                        ("timeoutSeconds", max(1, math.ceil(timeout)))]
        if version:  # else the watch starts with the current state of each (ADDED events)
            query.append(("resourceVersion", version))
        rv = version
        try:
            # The read timeout ends the wait on time between events (the server's
            # timeoutSeconds is whole seconds).
            resp = self._stream(path, query, (self._timeout, max(0.05, timeout)))
            with contextlib.closing(resp):
                for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":  # e.g. 410 Gone: version too old
                        raise ValueError(f"watch error: {obj.get('message')}")
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    budget = Budget.from_obj(obj)
                    if event.get("type") == "DELETED":
                        budget = replace(budget, gone=True)
                    if wake(budget) or time.monotonic() >= deadline:
                        return rv
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
            return rv  # no event before the timeout
        except (KubeApiError, ApiFailure, urllib3.exceptions.HTTPError, OSError,
                ValueError) as exc:
            if version:  # resuming: start again at once from the current states
                LOG.info("budget watch from %s ended (%s); starting again", version, exc)
                return ""
            LOG.info("budget watch failed (%s); waiting %.1fs instead", exc, timeout)
            time.sleep(max(0.0, deadline - time.monotonic()))
            return ""
        return rv

    def _watch_pods(self, node: str, rv: str, timeout: float) -> Iterator[Obj]:
        seconds = max(1, int(timeout) + 1)
        query: Query = [("fieldSelector", _on_node(node)),
                                        ("watch", "true"), ("timeoutSeconds", seconds),
                                        ("allowWatchBookmarks", "false")]
        if rv:
            query.append(("resourceVersion", rv))
        resp = self._stream("/api/v1/pods", query, (self._timeout, seconds + 5))
        with contextlib.closing(resp):
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    raise ValueError(f"watch error: {event.get('object')}")
                yield event

    def _poll_gone(self, node: str, remaining: set[str], deadline: float) -> set[str]:
        def left() -> set[str] | NotYet[set[str]]:
            remaining.intersection_update(p.uid for p in self.list_pods(node))
            return NotYet(remaining) if remaining else remaining

        if not remaining:
            return remaining
        return poll(left, deadline=deadline, interval=self._poll, expire=lambda r: r)

    # -- leases ------------------------------------------------------------------------
    def _lease_path(self, namespace: str, name: str = "") -> str:
        base = object_path("/apis/coordination.k8s.io/v1/namespaces", namespace, "/leases")
        return object_path(base, name) if name else base

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        try:
            return _lease_of(self._call("GET", self._lease_path(namespace, name)))
        except KubeNotFound:
            return None

    def create_lease(self, namespace: str, lease: Lease) -> Lease:
        return _lease_of(self._call("POST", self._lease_path(namespace),
                                    body=_lease_body(namespace, lease)))

    def update_lease(self, namespace: str, lease: Lease) -> Lease:
        return _lease_of(self._call("PUT", self._lease_path(namespace, lease.name),
                                    body=_lease_body(namespace, lease)))


def _pod(pod: Pod) -> str:
    return object_path(object_path("/api/v1/namespaces", pod.namespace, "/pods"), pod.name)


def translate(exc: ApiFailure, what: str) -> KubeApiError:
    """Our error for an API failure."""
    text = f"Kubernetes API {what}: HTTP {exc.status}: {exc.message}"
    if exc.status == 404:
        return KubeNotFound(text)
    if exc.status == 409:
        return KubeConflict(text)
    return KubeApiError(text)


def eviction_outcome(exc: ApiFailure) -> EvictResult:
    """How drain should treat a refused eviction (the kubectl rules)."""
    details = exc.body.get("details") or {}
    if exc.status == 429:  # a PDB refusal names the budget in its causes
        causes = [c for c in details.get("causes") or []
                  if isinstance(c, dict) and c.get("message")]
        budgets = [m.group(1) for c in causes if c.get("reason") == BUDGET_CAUSE
                   and (m := _BUDGET_NAME.match(str(c["message"])))]
        return EvictResult("retry", " ".join([exc.message, *(str(c["message"]) for c in causes)]),
                           budget=budgets[0] if budgets else "")
    if exc.status == 404 and (details.get("kind") == "pods" or not exc.body.get("details")
                              and "pods" in exc.message):
        return EvictResult("gone", exc.message)
    if exc.status in (404, 405):
        return EvictResult("unsupported", exc.message)
    if exc.status == 409:  # the UID precondition failed: the pod was replaced
        return EvictResult("gone", exc.message)
    return EvictResult("failed", f"HTTP {exc.status}: {exc.message}")


def _lease_body(namespace: str, lease: Lease) -> Obj:
    meta: Obj = {"name": lease.name, "namespace": namespace}
    if lease.version:
        meta["resourceVersion"] = lease.version
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": lease.holder, "leaseDurationSeconds": lease.duration,
                     "renewTime": _iso(lease.renewed_at)}}


def _lease_of(obj: Obj) -> Lease:
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    return Lease(name=str(meta.get("name")), holder=spec.get("holderIdentity") or None,
                 renewed_at=_parse_iso(spec.get("renewTime")),
                 duration=int(spec.get("leaseDurationSeconds") or 0),
                 version=str(meta.get("resourceVersion") or ""))
