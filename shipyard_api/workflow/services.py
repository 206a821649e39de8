"""What every step of an action reaches: the document store, the peers' clients, settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from common.jsontypes import JSONObject
from common.workflow import StepPolicy
from shipyard_api.clients.ports import DrydockPort, PromenadePort


class DocumentsPort(Protocol):
    """The part of Shipyard's document store that actions use."""

    def revision_id(self, version: str) -> int | None: ...

    def rendered_documents(self, revision_id: int, *,
                           cleartext: bool = True) -> list[dict[str, Any]]: ...

    def add_tag(self, revision_id: int, tag: str,
                data: JSONObject | None = None) -> object: ...

    def intermediate_commits(self, using_revision: int) -> list[int]: ...

    def design_ref(self, revision_id: int, base_url: str) -> str: ...


class PlanFactsPort(Protocol):
    """The facts a stored plan relied on (steps of an action created from it re-check them)."""

    def facts(self, plan_id: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class ActionSettings:
    """`public_url`: where Promenade and Drydock fetch designs; retries/backoff of steps."""

    public_url: str = "http://127.0.0.1:9000"
    step_retries: int = 3
    step_backoff: float = 5.0
    max_backoff: float = 300.0
    outage_window: float = 300.0
    progress_interval: float = 2.0  # how often a running step reads its peer's progress
    long_poll_wait: float = 10.0
    budget_lease: float = 60.0  # failure-domain slots: lease (s), renewed every quarter

    def policy(self, timeout: float) -> StepPolicy:
        return StepPolicy(timeout=float(timeout), retries=self.step_retries,
                          backoff=self.step_backoff, max_backoff=self.max_backoff,
                          outage_window=self.outage_window)


@dataclass
class Services:
    """The collaborators handed to every step, finaliser and admission check."""

    promenade: PromenadePort
    drydock: DrydockPort
    documents: DocumentsPort
    settings: ActionSettings
    plans: PlanFactsPort | None = None
