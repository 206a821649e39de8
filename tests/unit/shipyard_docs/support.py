"""Helpers for document store tests: sample documents, a store, an in-process app."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import falcon.testing
import yaml
from cryptography.fernet import Fernet
from oslo_config import cfg

from common import config
from common.app import create_service_app, service_spec
from common.auth import Identity, TokenAuthenticator
from common.crypto import FernetCipher
from common.status import Message, validation_message
from shipyard_api import policy
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.documents.config import OPTS
from shipyard_api.documents.store import DocumentStore
from shipyard_api.documents.validation import CommitValidator
from shipyard_api.resources.documents import document_routes

ADMIN = {"X-Auth-Token": "admin-token"}
READER = {"X-Auth-Token": "reader-token"}
NOBODY = {"X-Auth-Token": "nobody-token"}
YAML_H = {"Content-Type": "application/x-yaml"}


def doc(schema: str, name: str, data: Any, *, encrypted: bool = False,
        **meta: Any) -> dict[str, Any]:
    return {"schema": schema, "metadata": {
        "schema": "metadata/Document/v1", "name": name,
        "layeringDefinition": {"abstract": False, "layer": "site"},
        "storagePolicy": "encrypted" if encrypted else "cleartext", **meta}, "data": data}


def deployment_configuration() -> dict[str, Any]:
    return doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
               {"physical_provisioner": {"deploy_interval": 30}})


def secret(name: str = "bmc-password", value: str = "s3cret-value") -> dict[str, Any]:
    return doc("deckhand/Passphrase/v1", name, value, encrypted=True)


def node(name: str = "node01", profile: str = "default") -> dict[str, Any]:
    return doc("test/Thing/v1", name, {"host_profile": profile})


def dump(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def make_store(url: str, *, key: bytes | None = None, lease: float = 300.0) -> DocumentStore:
    upgrade(url)
    cipher = FernetCipher(key or Fernet.generate_key())
    return DocumentStore(session_factory(make_engine(url)), cipher=cipher, clock=Clock(),
                         lease_seconds=lease)


class FakePeer:
    """A peer validator answering with fixed messages; records the design refs it got."""

    def __init__(self, name: str, messages: list[Message] | None = None) -> None:
        self.name = name
        self.messages = messages or []
        self.refs: list[str] = []

    def __call__(self, design_ref: str, ctx: Any) -> list[Message]:
        self.refs.append(design_ref)
        return list(self.messages)


def peer_error(name: str, text: str) -> Message:
    return {**validation_message(text, name=f"{name}Validation"), "source": name}


def make_conf() -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    config.register_common(conf)
    for group, opts in OPTS:
        conf.register_opts(opts, group=group)
    conf([], default_config_files=[])
    return conf


def make_client(store: DocumentStore, peers: list[Any] | None = None,
                public_url: str = "http://shipyard.test") -> falcon.testing.TestClient:
    conf = make_conf()
    validator = CommitValidator(store, peers or [], public_url=public_url)
    spec = service_spec(conf, "shipyard", document_routes(store, validator),
                        policy.list_rules())
    spec.authenticator = TokenAuthenticator({
        "admin-token": Identity("alice", ("admin",)),
        "reader-token": Identity("bob", ("reader",)),
        "nobody-token": Identity("eve", ()),
    })
    return falcon.testing.TestClient(create_service_app(spec))
