"""The EtcdClusters document: schema, cross-checks, TLS material from Passphrase documents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.errors import NotFound, ValidationFailed
from promenade_api.etcd.design import load_clusters, validate_design

from .conftest import etcd_doc, kubernetes_cluster


def passphrase(name, text):
    return {"schema": "deckhand/Passphrase/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": name,
                         "storagePolicy": "encrypted"}, "data": text}


def test_a_valid_document_has_no_problems():
    assert validate_design([etcd_doc([kubernetes_cluster()])]) == []


def test_every_problem_is_reported():
    bad = kubernetes_cluster(threshold=5)
    bad["members"].append({"name": "node01", "node": "node09"})
    doc = etcd_doc([bad, dict(bad)])
    texts = [m["message"] for m in validate_design([doc])]
    assert any("defined twice" in t for t in texts)
    assert any("member twice" in t for t in texts)
    assert any("exceeds" in t for t in texts)


def test_schema_violations_are_validation_messages():
    doc = etcd_doc([{"name": "Bad Name", "client_endpoints": ["ftp://x"], "members": []}])
    messages = validate_design([doc])
    assert len(messages) >= 3 and all(m["kind"] == "ValidationMessage" for m in messages)


def test_a_missing_passphrase_reference_is_reported():
    cluster = kubernetes_cluster()
    cluster["tls"] = {"ca": {"passphrase": "etcd-ca"}}
    texts = [m["message"] for m in validate_design([etcd_doc([cluster])])]
    assert any("etcd-ca" in t for t in texts)


def test_tls_passphrases_become_private_files(tmp_path):
    cluster = kubernetes_cluster()
    cluster["tls"] = {"ca": {"passphrase": "etcd-ca"}, "cert": "/etc/etcd/client.pem"}
    spec = load_clusters([etcd_doc([cluster]), passphrase("etcd-ca", "PEM DATA")])[0]
    assert spec.tls.cert == "/etc/etcd/client.pem"
    assert Path(spec.tls.ca).read_text() == "PEM DATA"
    assert oct(os.stat(spec.tls.ca).st_mode & 0o777) == "0o600"


def test_members_map_to_nodes():
    cluster = kubernetes_cluster(threshold=0)
    cluster["members"] = [{"name": "etcd-a", "node": "node01"}]
    spec = load_clusters([etcd_doc([cluster])])[0]
    assert spec.member_names_of("node01") == {"etcd-a", "node01"}


def test_without_the_document_is_not_found():
    with pytest.raises(NotFound):
        load_clusters([])


def test_an_invalid_document_is_a_400():
    with pytest.raises(ValidationFailed):
        load_clusters([etcd_doc([{"name": "x"}])])
