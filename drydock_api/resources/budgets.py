"""Failure-domain budget slots: take (POST), renew (PUT), give up (DELETE), list (GET)."""

from __future__ import annotations

import falcon

from common.body import read_json_object
from common.policy import authorize
from drydock_api.budgets.service import BudgetService


class BudgetSlotsResource:
    def __init__(self, service: BudgetService) -> None:
        self._service = service

    @authorize("drydock:take_budget_slot")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._service.take(req.context.berth, read_json_object(req))

    @authorize("drydock:get_budget_slots")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._service.held(req.get_param("holder"))


class BudgetSlotResource:
    def __init__(self, service: BudgetService) -> None:
        self._service = service

    @authorize("drydock:renew_budget_slot")
    def on_put(self, req: falcon.Request, resp: falcon.Response, holder: str) -> None:
        resp.media = self._service.renew(holder, read_json_object(req, required=False))

    @authorize("drydock:release_budget_slot")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, holder: str) -> None:
        self._service.release(holder)
        resp.status = falcon.HTTP_204
