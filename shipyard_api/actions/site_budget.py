"""deploy_site / update_site with budget=refuse: refused at POST while a failure domain of
the strategy's nodes is full (409 naming it and its holders), nothing created."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from common.context import RequestContext
from shipyard_api.actions import baremetal, budget
from shipyard_api.actions.params import Params
from shipyard_api.actions.ports import Services
from shipyard_api.workflow.definitions import ActionParameters, Prepared

PARAM: Final = "budget"


def read(p: Params) -> ActionParameters:
    """The stored parameter: wait (the default) or refuse; problems go to `p`."""
    return {PARAM: p.choice(PARAM, budget.CHOICES, "wait")}


def admit(name: str) -> Callable[[Prepared, Services, RequestContext], None]:
    """The admission check of site action `name`: with budget=refuse, Drydock's dry run for
    every node of the strategy's groups; any full domain refuses the action. Admitted, the
    groups' nodes take their slots one at a time within each budget, as with wait."""
    def check(prepared: Prepared, svc: Services, ctx: RequestContext) -> None:
        if prepared.parameters.get(PARAM) != "refuse" or prepared.revision_id is None:
            return
        ref = svc.documents.design_ref(prepared.revision_id, svc.settings.public_url)
        docs = svc.documents.rendered_documents(prepared.revision_id, cleartext=False)
        planned = baremetal.plan_deployment(docs, svc.drydock, ref, ctx)
        if isinstance(planned, tuple):  # an unplannable strategy fails in its own step
            budget.refuse_if_full(svc, ref, list(planned[0].nodes), ctx, name)

    return check
