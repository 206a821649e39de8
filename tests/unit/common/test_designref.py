"""Design references: file://, http:// and deckhand+http:// resolved; bad ones refused."""

import json
from http.server import BaseHTTPRequestHandler

import pytest

from common.context import RequestContext
from common.designref import DesignResolver, RefPolicy, href_of
from common.documents import parse_documents, validate_documents
from common.errors import BadRequest, NotFound, PayloadTooLarge
from tests.support.httpserver import serving

DOCS = """---
schema: drydock/Region/v1
metadata: {schema: metadata/Document/v1, name: site}
data: {}
---
schema: deckhand/Passphrase/v1
metadata: {schema: metadata/Document/v1, name: bmc}
data: secret
"""


def resolver(host="127.0.0.1:1", root="/nonexistent", **kwargs):
    """A resolver allowing http://host/ (tokens included) and files under `root`."""
    policy = RefPolicy(allowed_urls=(f"http://{host}/",), file_root=str(root),
                       token_url=f"http://{host}/")
    return DesignResolver(policy, **kwargs)


@pytest.fixture(scope="module")
def server():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append((self.path, dict(self.headers)))
            if self.path.startswith("/missing"):
                self.send_response(404)
                self.end_headers()
                return
            kind, body = "application/x-yaml", DOCS.encode()
            if self.path.startswith("/json"):  # a server that offers JSON, as Shipyard does
                kind, body = "application/json", json.dumps(parse_documents(DOCS)).encode()
            if self.path.startswith("/badjson"):
                kind, body = "application/json", b'{"schema": "not a list"}'
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Handler) as host:
        yield host, seen


def test_file_reference(tmp_path):
    path = tmp_path / "design.yaml"
    path.write_text(DOCS)
    docs = resolver(root=tmp_path).resolve({"rel": "design", "href": f"file://{path}",
                                     "type": "application/x-yaml"})
    assert [d["metadata"]["name"] for d in docs] == ["site", "bmc"]


def test_http_reference(server):
    host, _ = server
    docs = resolver(host).resolve(f"http://{host}/design.yaml")
    assert len(docs) == 2


def test_deckhand_http_reference_forwards_marker(server):
    host, seen = server
    ctx = RequestContext(token="tok")
    docs = resolver(host).resolve(
        f"deckhand+http://{host}/api/v1.0/revisions/1/rendered-documents", ctx)
    assert docs[0]["schema"] == "drydock/Region/v1"
    path, headers = seen[-1]
    assert path == "/api/v1.0/revisions/1/rendered-documents"
    assert headers["X-Context-Marker"] == ctx.marker and headers["X-Auth-Token"] == "tok"


def test_json_is_asked_for_and_parsed_when_the_server_offers_it(server):
    host, seen = server
    docs = resolver(host).resolve(f"http://{host}/json/rendered-documents")
    assert docs == parse_documents(DOCS)
    assert seen[-1][1]["Accept"].startswith("application/json")


def test_json_that_is_not_a_list_of_documents_is_400(server):
    host, _ = server
    with pytest.raises(BadRequest, match="list of mappings"):
        resolver(host).resolve(f"http://{host}/badjson/rendered-documents")


def test_results_are_cached_by_href(server):
    host, seen = server
    cached = resolver(host)
    before = len(seen)
    cached.resolve(f"http://{host}/cached.yaml")
    cached.resolve(f"http://{host}/cached.yaml")
    assert len(seen) == before + 1


def test_missing_http_document_is_404(server):
    host, _ = server
    with pytest.raises(NotFound):
        resolver(host).resolve(f"http://{host}/missing.yaml")


@pytest.mark.parametrize("ref", ["ftp://x/y", "s3://bucket/x", "/no/scheme"])
def test_unknown_scheme_is_400(ref):
    with pytest.raises(BadRequest) as info:
        resolver().resolve(ref)
    assert info.value.code == 400


@pytest.mark.parametrize("ref", [None, "", {"rel": "design"}, {"href": ""}])
def test_missing_reference_is_400_missing_design_ref(ref):
    with pytest.raises(BadRequest) as info:
        href_of(ref)
    assert info.value.instance_reason == "MissingDesignRef"


def test_malformed_yaml_is_400_naming_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("schema: a/B/v1\nmetadata: {name: x\ndata: [\n")
    with pytest.raises(BadRequest, match="line"):
        resolver(root=tmp_path).resolve(f"file://{path}")


def test_oversize_documents_are_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(DOCS * 50)
    with pytest.raises(PayloadTooLarge):
        resolver(root=tmp_path, max_bytes=100).resolve(f"file://{path}")


def test_validation_names_every_bad_document():
    docs = parse_documents("""---
schema: drydock/Region/v1
data: {}
---
schema: not-a-schema
metadata: {schema: metadata/Document/v1, name: x}
data: {}
""")
    messages = validate_documents(docs)
    assert len(messages) == 2
    assert all(m["kind"] == "ValidationMessage" and m["error"] for m in messages)
    assert {m["documents"][0]["schema"] for m in messages} == {"drydock/Region/v1",
                                                              "not-a-schema"}


@pytest.mark.parametrize("ref", ["deckhand+http://\x7f/x", "http://[::1/x", "https://"])
def test_unparseable_url_is_400_not_a_gateway_error(ref):
    with pytest.raises(BadRequest) as info:
        resolver().resolve(ref)
    assert info.value.instance_reason in ("InvalidDesignRef", "DesignRefNotAllowed")


def test_a_committed_revision_stays_cached_after_the_ttl_other_documents_do_not(server):
    host, seen = server
    now = [0.0]
    cached = resolver(host, cache_ttl=30.0, clock=lambda: now[0])
    revision = f"deckhand+http://{host}/api/v1.0/revisions/7/rendered-documents"
    other = f"http://{host}/changing.yaml"
    for ref in (revision, other):
        cached.resolve(ref)
    now[0] = 31.0
    for ref in (revision, other):
        cached.resolve(ref)
    assert sum(p == "/api/v1.0/revisions/7/rendered-documents" for p, _ in seen) == 1
    assert sum(p == "/changing.yaml" for p, _ in seen) == 2
