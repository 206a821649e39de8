"""Builds the document store and its commit validator from Shipyard's configuration."""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from common.crypto import FernetCipher, load_or_create_key
from common.httpclient import peer_client
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.documents.store import DocumentStore
from shipyard_api.documents.validation import CommitValidator, HttpPeerValidator, PeerValidator

DEFAULT_DB = "sqlite:///shipyard.db"


@dataclass
class DocumentDeps:
    """What the document routes need; `public_url` is where peers fetch designs."""

    store: DocumentStore
    validator: CommitValidator

    @property
    def public_url(self) -> str:
        return self.validator.public_url


def build_document_deps(conf: cfg.ConfigOpts,
                        sessions: sessionmaker[Session] | None = None) -> DocumentDeps:
    """The store on `[database] connection` (migrated here when no `sessions` are given)."""
    if sessions is None:
        url = conf.database.connection or DEFAULT_DB
        upgrade(url)
        sessions = session_factory(make_engine(url))
    opts = conf.documents
    cipher = FernetCipher(load_or_create_key(opts.secret_key_file),
                          "[documents] secret_key_file")
    store = DocumentStore(sessions, cipher=cipher, lease_seconds=opts.lock_lease_seconds,
                          max_documents=opts.max_documents)
    peers: list[PeerValidator] = [
        HttpPeerValidator(name, peer_client(conf, name), timeout=opts.validation_timeout)
        for name in opts.validation_peers]
    public_url = opts.public_url or conf.peers.shipyard_url
    return DocumentDeps(store=store, validator=CommitValidator(store, peers,
                                                               public_url=public_url))
