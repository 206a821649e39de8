"""Node endpoints of the teardown spec: drain, clear-labels, remove-etcd, kubelet, removal."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

import falcon

from common import disruption, policy
from common.body import read_json
from common.errors import BadRequest, NotFound
from common.idempotency_store import HEADER
from common.jsontypes import JSONObject
from common.longpoll import ChangeWaiters, wait_params
from common.policy import authorize
from common.status import Message, simple_message, status_body
from promenade_api.db.runs import RunStore
from promenade_api.decommission import DecommissionParams, request_cancel
from promenade_api.decommission_run import (
    DurableDecommission,
    RunRequest,
    fingerprint_of,
    request_timeout,
    scratch_store,
)
from promenade_api.etcd.model import ClusterSpec
from promenade_api.preview import PreviewParams, preview
from promenade_api.resources.params import (
    Query,
    checked_node,
    design_ref_body,
    leave_of,
    leaving_names,
    operator_of,
)
from promenade_api.service import Promenade

LOG = logging.getLogger(__name__)
VERSION_HEADER = "X-Node-Version"
WAITED_HEADER = "X-Long-Poll"  # changed | timeout | busy (over the cap: answered at once)


def render(resp: falcon.Response, message: str, messages: list[Message] | None = None,
           details: Mapping[str, object] | None = None) -> None:
    resp.status = falcon.HTTP_200
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(status_body(200, message, messages=messages or [], extra=details))


def _drain_rules(svc: Promenade, timeout: int | None, grace: int | None,
                 names: tuple[str, str]) -> list[tuple[bool, str]]:
    t = svc.settings.drain_timeout if timeout is None else timeout
    g = svc.settings.drain_grace_period if grace is None else grace
    return [(t < 1, f"{names[0]} must be at least 1"),
            (g >= t, f"{names[1]} ({g}) must be less than {names[0]} ({t})")]


def _leave(req: falcon.Request, svc: Promenade, leave: disruption.Leave | None
           ) -> tuple[disruption.Leave | None, str]:
    """A valid leave to disrupt: allowed by promenade:disrupt_pdbs, and whose (403)."""
    if leave is None:
        return None, ""
    policy.check(req, "promenade:disrupt_pdbs")
    ctx = req.context.berth
    operator = operator_of(ctx, svc.settings.service_roles)
    LOG.warning("%s %s: %s gives leave to disrupt PodDisruptionBudget(s) %s after %ss%s",
                req.method, req.path, operator, ", ".join(leave.budgets), leave.after,
                f" (passed on by {ctx.user})" if ctx.on_behalf_of else "")
    return leave, operator


class NodeResource:
    """GET /nodes/{node_id}: the operator's view of one node. `?wait=S&since=V` answers as
    soon as the Node object's version (header X-Node-Version) differs from V (a Kubernetes
    watch), or after S seconds unchanged; over the waiter cap at once (X-Long-Poll busy)."""

    def __init__(self, svc: Promenade, waiters: ChangeWaiters | None = None,
                 max_wait: float = 0.0) -> None:
        self._svc = svc
        self._waiters = waiters or ChangeWaiters(max_waiters=0, recheck=1.0)
        self._max_wait = max_wait

    @authorize("promenade:get_node")
    @checked_node
    def on_get(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, ["design_ref", "wait", "since"])
        wait, since = 0.0, None
        try:
            wait, since = wait_params(req.get_param("wait"), req.get_param("since"),
                                      self._max_wait)
        except BadRequest as exc:
            query.problems += [str(m["message"]) for m in exc.messages]
        query.check()
        ref = req.get_param("design_ref")
        clusters = self._svc.clusters(ref, req.context.berth, required=False) if ref else []
        if since is not None and wait > 0 and self._svc.node_version(node_id) == since:
            with self._waiters.slot() as free:
                changed = free and self._svc.kube.watch_node(node_id, since, wait)
            resp.set_header(WAITED_HEADER, "busy" if not free else
                            "changed" if changed else "timeout")
        resp.media = self._svc.node_view(node_id, clusters)
        resp.set_header(VERSION_HEADER, self._svc.node_version(node_id))


class DrainResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:drain_node")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, ["timeout", "grace-period", disruption.PDBS, disruption.AFTER])
        timeout, grace = query.whole("timeout"), query.whole("grace-period")
        leave = leave_of(req, query)
        query.check(*_drain_rules(self._svc, timeout, grace, ("timeout", "grace-period")))
        leave, operator = _leave(req, self._svc, leave)
        report = self._svc.drain(node_id, timeout, grace, leave=leave, operator=operator)
        render(resp, f"Drained {node_id}", report.messages(), report.as_dict())


class ClearLabelsResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:clear_labels")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, ["timeout"])
        timeout = query.whole("timeout")
        query.check()
        result = self._svc.clear_labels(node_id, timeout)
        render(resp, f"Cleared the labels of {node_id}",
               [simple_message(f"Removed label {k}", error=False)
                for k in result["removed_labels"]], result)


class RemoveEtcdResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:remove_etcd")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        messages = etcd_membership(self._svc, req, node_id, self._svc.remove_etcd)
        render(resp, f"Removed the etcd members of {node_id}", messages)


def etcd_membership(svc: Promenade, req: falcon.Request, node_id: str,
                    change: Callable[[str, list[ClusterSpec], int | None], list[Message]]
                    ) -> list[Message]:
    """A change of `node_id`'s etcd memberships (remove, join) with the request's timeout
    and the design's clusters."""
    query = Query(req, ["timeout"])
    timeout = query.whole("timeout")
    query.check((timeout == 0, "timeout must be at least 1"))
    clusters = svc.clusters(design_ref_body(req), req.context.berth, required=False)
    return change(node_id, clusters, timeout)


class ShutdownKubeletResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:shutdown_kubelet")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, ["timeout"])
        timeout = query.whole("timeout")
        query.check((timeout == 0, "timeout must be at least 1"))
        result = self._svc.shutdown_kubelet(node_id, timeout)
        render(resp, f"The kubelet of {node_id} is shut down",
               [simple_message(f"Kubelet stopped: {result['evidence']}", error=False)], result)


class RemoveFromClusterResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:remove_from_cluster")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        Query(req, []).check()
        result = self._svc.remove_from_cluster(node_id)
        render(resp, f"Removed {node_id} from the Kubernetes cluster", [], result)


class DecommissionResource:
    """POST: a decommission as a durable run (a replay of the same request joins the active
    run, a request after a restart takes it over); GET: the node's active or latest run."""

    PARAMS = ("drain-node-timeout", "drain-node-grace-period", "clear-labels-timeout",
              "remove-etcd-timeout", "etcd-ready-timeout")
    joins_running_requests = True  # a keyed replay reaches the run while the first still runs

    def __init__(self, svc: Promenade, runs: RunStore | None = None) -> None:
        self._svc = svc
        self._runs = DurableDecommission(svc, runs or scratch_store())

    @authorize("promenade:get_decommission")
    @checked_node
    def on_get(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        Query(req, []).check()
        run = self._runs.store.latest(node_id)
        if run is None:
            raise NotFound(f"No decommission of {node_id} is recorded")
        resp.media = run

    @authorize("promenade:decommission_node")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, (*self.PARAMS, "fenced", disruption.PDBS, disruption.AFTER))
        t = [query.whole(name) for name in self.PARAMS]
        fenced, leave = query.flag("fenced"), leave_of(req, query)
        query.check(*_drain_rules(self._svc, t[0], t[1],
                                  ("drain-node-timeout", "drain-node-grace-period")),
                    (t[3] == 0, "remove-etcd-timeout must be at least 1"))
        leave, operator = _leave(req, self._svc, leave)
        params = DecommissionParams(t[0], t[1], t[2], t[3], t[4], fenced=fenced, leave=leave,
                                    operator=operator)
        ref, ctx = design_ref_body(req), req.context.berth
        key = req.get_header(HEADER)
        query_params: JSONObject = {k: [*v] if isinstance(v, list) else v
                                    for k, v in req.params.items()}
        wire: JSONObject = {"query": query_params, "design_ref": ref, "keyed": key is not None}
        mine = None if key is None else f"{ctx.user}\0{key}"  # keys are the caller's own
        run = RunRequest(node_id, params, wire, fingerprint_of(node_id, req.params, ref, mine),
                         str(ctx.user), request_timeout(self._svc, params))
        code, body = self._runs.answer(run, self._svc.decommission_inputs(ref, ctx))
        resp.status = falcon.code_to_http_status(code)
        resp.content_type = falcon.MEDIA_JSON
        resp.text = json.dumps(body)


class DecommissionPreviewResource:
    """POST /nodes/{node_id}/decommission/preview: what a decommission would do now, with
    its blockers and warnings (same body as decommission; nothing is changed)."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:preview_decommission")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        query = Query(req, ("fenced", "leaving"))
        fenced = query.flag("fenced")
        query.check((isinstance(req.params.get("leaving"), list),
                     "leaving must be one comma-separated list of node names"))
        leaving = leaving_names(req.params.get("leaving"))
        clusters, nodes = self._svc.decommission_inputs(design_ref_body(req), req.context.berth)
        resp.media = preview(self._svc, node_id, clusters, PreviewParams(fenced, leaving), nodes)


class DecommissionCancelResource:
    """POST /nodes/{node_id}/decommission/cancel: running decommissions stop at a safe point."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:decommission_node")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        Query(req, []).check()
        if not request_cancel(self._svc.kube, node_id, self._svc.wall()):
            render(resp, f"{node_id} is not known to Kubernetes: nothing to cancel", [],
                   {"node": node_id, "cancel_requested": False})
            return
        render(resp, f"Cancellation of the decommission of {node_id} requested", [],
               {"node": node_id, "cancel_requested": True})


class NodeLabelsResource:
    """PUT /node-labels/{node_id}: the node ends with exactly these (plus kubernetes.io) labels."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:update_node_labels")
    @checked_node
    def on_put(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        Query(req, []).check()
        result = self._svc.put_labels(node_id, read_json(req))
        render(resp, f"Updated the labels of {node_id}",
               [simple_message(f"Added {k}", error=False) for k in result["added"]]
               + [simple_message(f"Removed {k}", error=False) for k in result["removed"]],
               result)
