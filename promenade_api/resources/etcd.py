"""GET /etcd-cluster-health-statuses and POST /validatedesign."""

from __future__ import annotations

import json
from typing import Any

import falcon

from common.body import read_json
from common.errors import ValidationFailed
from common.policy import authorize
from common.status import status_body
from promenade_api.errors import MissingDesignRef
from promenade_api.resources.nodes import render
from promenade_api.resources.params import Query
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


class ValidateDesignResource:
    """Validates Promenade's documents of a design (Shipyard calls this at commit)."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("promenade:validate_design")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, required=False)
        ref: Any
        if isinstance(body, dict) and "href" in body:
            ref = body
        elif isinstance(body, str) and body.strip():
            ref = body.strip()
        else:
            raise MissingDesignRef("The body must be a design reference: {href: ...} or "
                                   "{rel: design, href: ..., type: application/x-yaml}")
        messages = self._svc.validate_design(ref, req.context.berth)
        if messages:
            raise ValidationFailed("Promenade's documents failed validation", messages=messages)
        resp.content_type = falcon.MEDIA_JSON
        resp.text = json.dumps(status_body(200, "Promenade's documents are valid"))
