"""The WSGI application: routes Kubernetes REST paths onto the cluster's API."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request, Response

from sitesim.kubeapi import discovery, pods, table
from sitesim.kubeapi.api import ListQuery
from sitesim.kubeapi.errors import (
    KubeBadRequest,
    KubeConflict,
    KubeError,
    KubeInternal,
    KubeMethodNotAllowed,
    KubeNotFound,
    KubeUnsupportedMediaType,
    success_status,
)
from sitesim.kubeapi.resources import ResourceType, lookup
from sitesim.kubeapi.watch import WatchQuery, open_watch

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from sitesim.kubeapi.cluster import KubeCluster

LOG = logging.getLogger(__name__)
Obj = dict[str, Any]
JSON = "application/json"


@dataclass(frozen=True)
class Route:
    """A parsed resource path."""

    res: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def _json(body: Any, code: int = 200) -> Response:
    return Response(json.dumps(body), status=code, content_type=JSON)


def _int_arg(request: Request, name: str) -> int | None:
    raw = request.args.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(str(raw))
    except ValueError as exc:
        raise KubeBadRequest(f"{name}: invalid integer {raw!r}") from exc


def _body(request: Request, required: bool = True) -> Any:
    mimetype = request.mimetype or "application/json"
    if not (mimetype == "application/json" or mimetype.endswith("+json")):
        raise KubeUnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types "
            f"include: application/json (got {mimetype!r})")
    data = request.get_data()
    if not data:
        if required:
            raise KubeBadRequest("the request body is empty")
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise KubeBadRequest(f"the body is not valid JSON: {exc}") from exc


def parse_route(group: str, version: str, segments: list[str]) -> Route:
    """Map the segments after /api/v1 or /apis/<g>/<v> onto a resource."""
    ns: str | None = None
    if segments[0] == "namespaces" and len(segments) >= 3 and segments[2] not in (
            "status", "finalize"):
        ns, segments = segments[1], segments[2:]
    if len(segments) > 3:
        raise KubeNotFound("the server could not find the requested resource")
    res = lookup(group, version, segments[0])
    if res is None or (ns is not None and not res.namespaced):
        raise KubeNotFound("the server could not find the requested resource")
    name = segments[1] if len(segments) > 1 else None
    sub = segments[2] if len(segments) > 2 else None
    if res.namespaced and name is not None and ns is None:
        raise KubeNotFound("the server could not find the requested resource")
    if sub not in (None, "status", "eviction") or (sub == "eviction" and res.plural != "pods"):
        raise KubeNotFound("the server could not find the requested resource")
    return Route(res, ns, name, sub)


class KubeApp:
    """WSGI callable serving discovery and every supported resource."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.cluster = cluster

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse
                 ) -> Iterable[bytes]:
        request = Request(environ)
        try:
            response = self.dispatch(request)
        except KubeError as exc:
            response = _json(exc.kube_status(), exc.code)
        except Exception as exc:  # render anything unexpected as a Status, like the apiserver
            LOG.exception("kube api: %s %s failed", request.method, request.path)
            error = KubeInternal(f"internal error: {exc}")
            response = _json(error.kube_status(), 500)
        return response(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        parts = [p for p in request.path.split("/") if p]
        if request.method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise KubeMethodNotAllowed(f"method {request.method} is not supported")
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return Response("ok", content_type="text/plain")
        if parts == ["version"]:
            return _json(discovery.version_info())
        if parts == ["api"]:
            return _json(discovery.api_versions(request.host))
        if parts == ["apis"]:
            return _json(discovery.api_group_list())
        if parts == ["openapi", "v3"]:
            return _json(discovery.openapi_v3_root())
        if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            gv = (parts[3], parts[4]) if parts[2] == "apis" and len(parts) == 5 else (
                "", parts[3])
            openapi = discovery.openapi_v3_group(*gv) if parts[2] in ("api", "apis") else None
            if openapi is not None:
                return _json(openapi)
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.api_group(parts[1])
            if group is not None:
                return _json(group)
        if len(parts) >= 2 and parts[0] == "api":
            return self._versioned(request, "", parts[1], parts[2:])
        if len(parts) >= 3 and parts[0] == "apis":
            return self._versioned(request, parts[1], parts[2], parts[3:])
        raise KubeNotFound("the server could not find the requested resource")

    def _versioned(self, request: Request, group: str, version: str,
                   rest: list[str]) -> Response:
        if not rest:
            listing = discovery.api_resource_list(group, version)
            if listing is None:
                raise KubeNotFound("the server could not find the requested resource")
            return _json(listing)
        route = parse_route(group, version, rest)
        if route.name is None:
            return self._collection(request, route)
        if route.subresource == "eviction":
            if request.method != "POST":
                raise KubeMethodNotAllowed("only create is supported on pods/eviction")
            body = _body(request)
            return _json(pods.evict(self.cluster, route.namespace or "", route.name, body), 201)
        return self._item(request, route, route.name)

    def _collection(self, request: Request, route: Route) -> Response:
        api, res = self.cluster.api, route.res
        if request.method == "POST":
            return _json(api.create(res, route.namespace, _body(request)), 201)
        if request.method != "GET":
            raise KubeMethodNotAllowed(f"{request.method} is not supported on {res.plural}")
        if request.args.get("watch") in ("true", "1", "True"):
            stream = open_watch(self.cluster, res, WatchQuery(
                route.namespace, request.args.get("labelSelector"),
                request.args.get("fieldSelector"), request.args.get("resourceVersion"),
                _int_arg(request, "timeoutSeconds"),
                table.wants_table(request.headers.get("Accept", ""))))
            return Response(stream, status=200, content_type=JSON, direct_passthrough=True)
        result = api.list(res, route.namespace, ListQuery(
            request.args.get("labelSelector"), request.args.get("fieldSelector"),
            _int_arg(request, "limit"), request.args.get("continue")))
        if table.wants_table(request.headers.get("Accept", "")):
            return _json(table.to_table(res.plural, result["items"], result["metadata"],
                                        self.cluster.wall(),
                                        request.args.get("includeObject", "Metadata")))
        return _json(result)

    def _item(self, request: Request, route: Route, name: str) -> Response:
        api, res, ns = self.cluster.api, route.res, route.namespace
        if request.method == "GET":
            obj = api.get(res, ns, name)
            if table.wants_table(request.headers.get("Accept", "")):
                return _json(table.to_table(res.plural, [obj], {}, self.cluster.wall(),
                                            request.args.get("includeObject", "Metadata")))
            return _json(obj)
        if request.method == "PUT":
            return _json(api.replace(res, ns, name, _body(request), route.subresource))
        if request.method == "PATCH":
            content_type = request.headers.get("Content-Type", "")
            if "patch" not in content_type:
                raise KubeUnsupportedMediaType(
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: application/json-patch+json, application/merge-patch+json, "
                    f"application/strategic-merge-patch+json (got {content_type!r})")
            return _json(api.patch(res, ns, name, _body(request), content_type,
                                   route.subresource))
        if request.method == "DELETE" and route.subresource is None:
            return self._delete(request, route, name)
        raise KubeMethodNotAllowed(f"{request.method} is not supported here")

    def _delete(self, request: Request, route: Route, name: str) -> Response:
        options = _body(request, required=False) or {}
        if not isinstance(options, dict):
            raise KubeBadRequest("the body must be DeleteOptions")
        grace = _int_arg(request, "gracePeriodSeconds")
        if grace is None and isinstance(options.get("gracePeriodSeconds"), int):
            grace = options["gracePeriodSeconds"]
        api, res = self.cluster.api, route.res
        with self.cluster.lock:
            current = api.store.get(res, route.namespace or "", name)
            wanted_uid = (options.get("preconditions") or {}).get("uid")
            if wanted_uid and wanted_uid != current["metadata"]["uid"]:
                raise KubeConflict(f"Precondition failed: UID in precondition: {wanted_uid}, "
                                   f"UID in object meta: {current['metadata']['uid']}",
                                   kind=res.plural, name=name)
            obj = api.delete(res, route.namespace, name, grace)
        if res.plural == "pods":
            return _json(obj)
        status = success_status(200)
        status["details"] = {"name": name, "kind": res.plural, "uid": obj["metadata"]["uid"]}
        return _json(status)


def make_wsgi_app(cluster: KubeCluster) -> KubeApp:
    """The WSGI callable of the simulated Kubernetes API."""
    return KubeApp(cluster)
