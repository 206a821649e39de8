"""What action steps use: the document store, the peers' clients and a few settings."""

from __future__ import annotations

from shipyard_api.workflow.definitions import FinishContext, StepContext
from shipyard_api.workflow.services import (
    ActionSettings,
    DocumentsPort,
    PlanFactsPort,
    Services,
)

__all__ = ["ActionSettings", "DocumentsPort", "PlanFactsPort", "Services", "services"]


def services(ctx: StepContext | FinishContext) -> Services:
    return ctx.services
