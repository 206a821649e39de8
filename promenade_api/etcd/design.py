"""Read the `promenade/EtcdClusters/v1` document of a design into ClusterSpecs, and check it."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from common.documents import Document, doc_ref, select, validate_documents
from common.errors import NotFound, ValidationFailed
from common.jsontypes import JSON, JSONObject, as_int, as_list, as_object
from common.status import Message, validation_message
from promenade_api.etcd.model import ClusterSpec, TlsFiles

SCHEMA = "promenade/EtcdClusters/v1"
PASSPHRASE = "deckhand/Passphrase/v1"
PROMENADE_SCHEMAS = (SCHEMA,)


def validate_design(docs: list[Document]) -> list[Message]:
    """Every problem of Promenade's documents: schema violations, then cross-checks."""
    own = [d for d in docs if d.get("schema") in PROMENADE_SCHEMAS]
    messages = validate_documents(own)
    if messages:
        return messages
    for doc in own:
        messages += _cross_checks(doc, docs)
    return messages


def _cross_checks(doc: Document, docs: list[Document]) -> list[Message]:
    ref = doc_ref(doc)
    out: list[Message] = []
    names: set[str] = set()
    passphrases = {doc_ref(d)["name"] for d in select(docs, PASSPHRASE)}
    for cluster in doc["data"]["clusters"]:
        name = cluster["name"]
        if name in names:
            out.append(_problem(f"Cluster {name} is defined twice", ref))
        names.add(name)
        members = [m["name"] for m in cluster["members"]]
        if len(set(members)) != len(members):
            out.append(_problem(f"Cluster {name} lists a member twice", ref))
        minimum = (cluster.get("thresholds") or {}).get("minimum_healthy_members", 0)
        if minimum > len(members):
            out.append(_problem(f"Cluster {name}: minimum_healthy_members {minimum} exceeds "
                                f"its {len(members)} members", ref))
        for part, value in (cluster.get("tls") or {}).items():
            if isinstance(value, dict) and value["passphrase"] not in passphrases:
                out.append(_problem(f"Cluster {name}: tls {part} refers to the missing "
                                    f"{PASSPHRASE} {value['passphrase']}", ref))
    return out


def _problem(text: str, ref: dict[str, str]) -> Message:
    return validation_message(text, name="EtcdClustersCheck", documents=[ref])


def load_clusters(docs: list[Document], secrets_dir: str | None = None) -> list[ClusterSpec]:
    """The clusters of the design; 404 when it has no EtcdClusters document, 400 when invalid."""
    found = select(docs, SCHEMA)
    if not found:
        raise NotFound(f"The design has no {SCHEMA} document")
    problems = validate_design(docs)
    if problems:
        raise ValidationFailed(f"The design's {SCHEMA} document is invalid", messages=problems)
    secrets = {doc_ref(d)["name"]: d.get("data") for d in select(docs, PASSPHRASE)}
    clusters = []
    for doc in found:
        for raw in doc["data"]["clusters"]:
            clusters.append(_cluster(raw, secrets, secrets_dir))
    return clusters


def _cluster(raw: JSONObject, secrets: Mapping[str, object],
             secrets_dir: str | None) -> ClusterSpec:
    tls_raw = as_object(raw.get("tls"))
    tls = TlsFiles(**{part: _material(tls_raw.get(part), secrets, secrets_dir)
                      for part in ("ca", "cert", "key")})
    members = [as_object(m) for m in as_list(raw["members"])]
    return ClusterSpec(
        name=str(raw["name"]),
        endpoints=tuple(str(e).rstrip("/") for e in as_list(raw["client_endpoints"])),
        members={str(m["name"]): str(m["node"]) for m in members},
        peer_urls={str(m["name"]): str(m["peer_url"]).rstrip("/") for m in members
                   if m.get("peer_url")},
        min_healthy=as_int(as_object(raw.get("thresholds")).get("minimum_healthy_members", 0)),
        tls=tls)


def _material(value: JSON, secrets: Mapping[str, object], secrets_dir: str | None) -> str | None:
    """A file path; a Passphrase reference is written to a private file named by its hash."""
    if value is None or isinstance(value, str):
        return value
    content = str(secrets[str(as_object(value)["passphrase"])])
    digest = hashlib.sha256(content.encode()).hexdigest()[:24]
    folder = Path(secrets_dir or tempfile.gettempdir()) / "promenade-etcd-tls"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{digest}.pem"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(content)
    return str(path)


def clusters_of_node(clusters: Iterable[ClusterSpec], node: str) -> list[ClusterSpec]:
    """Clusters the document says have a member on `node`."""
    return [c for c in clusters if node in c.members.values() or node in c.members]
