"""Commit-time validation: JSON Schemas, Shipyard's own checks and the peers' validatedesign."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from common.api import API_PREFIX
from common.context import RequestContext
from common.documents import Document, doc_ref, select, validate_documents
from common.errors import BerthError
from common.httpclient import ServiceClient
from common.jsontypes import JSONObject, as_list, as_object
from common.status import Message, is_status_body, validation_message
from shipyard_api.documents.store import DocumentStore
from shipyard_api.strategy.checks import check_strategy
from shipyard_api.strategy.model import configured_strategy_name

DEPLOYMENT_CONFIGURATION = "shipyard/DeploymentConfiguration/v1"
DEPLOYMENT_STRATEGY = "shipyard/DeploymentStrategy/v1"
BAREMETAL_NODE = "drydock/BaremetalNode/v1"


class PeerValidator(Protocol):
    """Asks one peer to validate the design behind a reference; returns its messages."""

    name: str

    def __call__(self, design_ref: str, ctx: RequestContext | None) -> list[Message]: ...


def shipyard_checks(docs: Sequence[Document]) -> list[Message]:
    """Shipyard's own rules: a deployment-configuration, and the strategy it names (whose
    groups are checked: names, dependencies, labels, criteria, selected nodes)."""
    configs = select(docs, DEPLOYMENT_CONFIGURATION, "deployment-configuration")
    if not configs:
        return [validation_message(
            f"The design has no {DEPLOYMENT_CONFIGURATION} named deployment-configuration",
            name="DeploymentConfiguration",
            documents=[{"schema": DEPLOYMENT_CONFIGURATION, "name": "deployment-configuration"}])]
    name, explicit = configured_strategy_name(docs)
    strategies = select(docs, DEPLOYMENT_STRATEGY, name)
    if not strategies:
        if not explicit:
            return []  # no strategy: one critical group of every node
        return [validation_message(
            f"deployment-configuration names deployment strategy {name}, which the design "
            f"does not contain", name="DeploymentStrategy",
            documents=[doc_ref(configs[0])])]
    nodes = [doc_ref(d)["name"] for d in select(docs, BAREMETAL_NODE)]
    return check_strategy(strategies[0].get("data"), doc_ref(strategies[0]), nodes or None)


class HttpPeerValidator:
    """`POST /api/v1.0/validatedesign` on a peer; its status body's messages are merged."""

    def __init__(self, name: str, client: ServiceClient, *, timeout: float) -> None:
        self.name = name
        self._client = client
        self._timeout = timeout

    def __call__(self, design_ref: str, ctx: RequestContext | None) -> list[Message]:
        check = f"{self.name.capitalize()}Validation"
        body = {"rel": "design", "href": design_ref, "type": "application/x-yaml"}
        try:
            resp = self._client.raw("POST", f"{API_PREFIX}/validatedesign", ctx=ctx,
                                    json_body=body, read_timeout=self._timeout)
        except BerthError as exc:
            return [validation_message(f"{self.name} could not validate the design: "
                                       f"{exc.message}", name=check)]
        try:
            status = resp.json()
        except ValueError:
            status = None
        if not is_status_body(status):
            return [validation_message(f"{self.name} answered HTTP {resp.status_code} without "
                                       "a status body", name=check)]
        return peer_messages(self.name, status, resp.status_code)


def peer_messages(name: str, status: JSONObject, code: int) -> list[Message]:
    """A peer's messages tagged with their source, plus one summary when it said nothing."""
    check = f"{name.capitalize()}Validation"
    listed: list[Message] = [
        {**m, "source": name}
        for m in as_list(as_object(status.get("details")).get("messageList"))
        if isinstance(m, dict)]
    failed = code >= 400 or status.get("status") == "Failure"
    if failed and not any(m.get("error") for m in listed):
        listed.append({**validation_message(f"{name}: {status.get('message') or 'invalid'}",
                                            name=check), "source": name})
    if not listed:
        listed.append({**validation_message(f"{name} found the design valid", name=check,
                                            error=False, level="Info"), "source": name})
    return listed


class CommitValidator:
    """Runs every check of a commit; the peers are asked in parallel."""

    def __init__(self, store: DocumentStore, peers: Sequence[PeerValidator], *,
                 public_url: str) -> None:
        self._store = store
        self._peers = list(peers)
        self.public_url = public_url

    def validate(self, revision_id: int, ctx: RequestContext | None = None) -> list[Message]:
        docs, messages = self._store.rendered(revision_id, cleartext=True)
        rendering_failed = any(m.get("error") for m in messages)
        messages = messages + validate_documents(docs) + shipyard_checks(docs)
        if not self._peers or rendering_failed:  # peers would read a design that cannot render
            return messages
        ref = self._store.design_ref(revision_id, self.public_url)
        with ThreadPoolExecutor(max_workers=len(self._peers)) as pool:
            futures = [pool.submit(peer, ref, ctx) for peer in self._peers]
            for peer, future in zip(self._peers, futures, strict=True):
                try:
                    messages += future.result()
                except Exception as exc:  # a broken peer client is a validation failure
                    messages.append(validation_message(
                        f"{peer.name} validation failed unexpectedly: {exc}",
                        name=f"{peer.name.capitalize()}Validation"))
        return messages
