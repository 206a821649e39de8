"""Options of Shipyard's document store (group `documents`)."""

from __future__ import annotations

from oslo_config import cfg

DOCUMENT_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("secret_key_file", default="shipyard-documents.key",
               help="Fernet key encrypting documents whose storagePolicy is encrypted; "
                    "generated (mode 0600) when the file does not exist."),
    cfg.FloatOpt("lock_lease_seconds", default=300.0, min=1.0,
                 help="Lease of the document write lock; a writer that died releases it "
                      "when the lease expires."),
    cfg.StrOpt("public_url", default="",
               help="Base URL peers use to fetch Shipyard's rendered documents (design "
                    "references); empty means [peers] shipyard_url. Drydock and Promenade "
                    "accept it only under their [peers] shipyard_url or [design] "
                    "allowed_urls."),
    cfg.IntOpt("max_documents", default=10_000, min=1,
               help="Most documents one configdocs upload (POST /configdocs/{collection}) "
                    "may hold; more are refused with 413 before they are parsed."),
    cfg.ListOpt("validation_peers", default=["drydock", "promenade"],
                help="Peers whose POST /api/v1.0/validatedesign runs on commit."),
    cfg.FloatOpt("validation_timeout", default=300.0, min=1.0,
                 help="Read timeout (s) of one peer's validatedesign call."),
]

OPTS: list[tuple[str, list[cfg.Opt]]] = [("documents", DOCUMENT_OPTS)]
