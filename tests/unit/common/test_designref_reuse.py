"""A design reference read again after its cache entry expires: one reader per href, and bytes
equal to those read last give back the documents parsed then (not parsed again)."""

import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

import common.designref
from common.designref import DesignResolver, RefPolicy
from tests.support.httpserver import serving

DOCS = """---
schema: drydock/Region/v1
metadata: {schema: metadata/Document/v1, name: site}
data: {}
"""


def resolver(root, host="127.0.0.1:1", **kwargs):
    policy = RefPolicy(allowed_urls=(f"http://{host}/",), file_root=str(root),
                       token_url=f"http://{host}/")
    return DesignResolver(policy, **kwargs)


@pytest.fixture
def parses(monkeypatch):
    """How many times YAML documents were parsed."""
    count = [0]
    real = common.designref.parse_documents

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(common.designref, "parse_documents", counting)
    return count


@pytest.fixture
def slow_server():
    """Serves DOCS after 0.3 s; the paths asked, in order."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.path)
            time.sleep(0.3)
            body = DOCS.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-yaml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Handler) as host:
        yield host, seen


def test_an_unchanged_file_read_after_the_ttl_gives_the_same_documents_unparsed(
        tmp_path, parses):
    path = tmp_path / "design.yaml"
    path.write_text(DOCS)
    now = [0.0]
    cached = resolver(tmp_path, cache_ttl=30.0, clock=lambda: now[0])
    first = cached.resolve(f"file://{path}")
    now[0] = 31.0
    again = cached.resolve(f"file://{path}")
    assert again is first
    assert parses[0] == 1


def test_a_changed_file_is_read_and_parsed_after_the_ttl(tmp_path, parses):
    path = tmp_path / "design.yaml"
    path.write_text(DOCS)
    now = [0.0]
    cached = resolver(tmp_path, cache_ttl=30.0, clock=lambda: now[0])
    cached.resolve(f"file://{path}")
    path.write_text(DOCS.replace("name: site", "name: other"))
    assert cached.resolve(f"file://{path}")[0]["metadata"]["name"] == "site"  # within the TTL
    now[0] = 31.0
    assert cached.resolve(f"file://{path}")[0]["metadata"]["name"] == "other"
    assert parses[0] == 2


def test_callers_of_an_expired_reference_at_once_fetch_it_once(tmp_path, slow_server):
    host, seen = slow_server
    now = [0.0]
    cached = resolver(tmp_path, host, cache_ttl=30.0, clock=lambda: now[0])
    href = f"http://{host}/design.yaml"
    first = cached.resolve(href)
    now[0] = 31.0
    results = []
    threads = [threading.Thread(target=lambda: results.append(cached.resolve(href)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(results) == 8
    assert all(r is first for r in results)
    assert seen == ["/design.yaml", "/design.yaml"]
