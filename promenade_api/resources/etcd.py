"""GET /etcd-cluster-health-statuses, POST /nodes/{node}/join-etcd and POST /validatedesign."""

from __future__ import annotations

import json

import falcon

from common.policy import authorize
from common.status import status_body
from promenade_api.errors import DesignInvalid, MissingDesignRef
from promenade_api.resources.nodes import etcd_membership, render
from promenade_api.resources.params import Query, checked_node, design_ref_body
from promenade_api.service import Promenade


class EtcdHealthResource:
    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:get_etcd_health")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        Query(req, ["design_ref"]).check()
        ref = req.get_param("design_ref")
        if not ref:
            raise MissingDesignRef("The design_ref query parameter is required")
        clusters = self._svc.clusters(ref, req.context.berth)
        render(resp, "etcd health", self._svc.etcd_health(clusters))


class JoinEtcdResource:
    """A redeployed node's etcd members back: each added as a learner, promoted once in sync
    with the leader, every step refused (409, nothing changed) unless quorum holds."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:join_etcd")
    @checked_node
    def on_post(self, req: falcon.Request, resp: falcon.Response, node_id: str) -> None:
        messages = etcd_membership(self._svc, req, node_id, self._svc.join_etcd)
        render(resp, f"The etcd members of {node_id} are voting members", messages)


class ValidateDesignResource:
    """Validates Promenade's documents of a design (Shipyard calls this at commit)."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("kubernetes_provisioner:post_validatedesign")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Airship's shape: body {href} (or Berth's {rel, href, type} or a bare href);
        200 or 400 reason Validation, ValidationMessages listing every problem."""
        ref = design_ref_body(req)
        messages = self._svc.validate_design(ref, req.context.berth)
        if messages:
            raise DesignInvalid("Promenade validations failed", messages=messages)
        resp.content_type = falcon.MEDIA_JSON
        resp.text = json.dumps(status_body(200, "Promenade validations succeeded",
                                           reason="Validation"))
