"""Hostile design references: nothing outside the allowed places is read or fetched, tokens
go only to Shipyard, and what is fetched is capped in bytes and time."""

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from common.context import RequestContext
from common.designref import DesignResolver, RefPolicy
from common.errors import BadGateway, BadRequest, PayloadTooLarge, Timeout

DOC = b"schema: drydock/Region/v1\nmetadata: {schema: metadata/Document/v1, name: s}\ndata: {}\n"


@pytest.fixture(scope="module")
def hostile():
    """A server: /ok serves a design, /endless streams forever, /slow trickles, /redirect."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802
            seen.append((self.path, dict(self.headers)))
            if self.path.startswith("/redirect"):
                self.send_response(302)
                self.send_header("Location", "/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            if self.path.startswith("/ok") or "/revisions/" in self.path:
                self.send_header("Content-Length", str(len(DOC)))
                self.end_headers()
                self.wfile.write(DOC)
                return
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                if self.path.startswith("/silent"):  # headers, then nothing for 5 s
                    time.sleep(5)
                    return
                while True:
                    if self.path.startswith("/slow"):
                        self.wfile.write(b"# ")
                        self.wfile.flush()
                        time.sleep(0.05)
                    else:
                        self.wfile.write(b"#" * 65536 + b"\n")
            except OSError:
                return

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def conf(shipyard="http://127.0.0.1:9", allowed=(), root="", timeout=30.0):
    return SimpleNamespace(
        peers=SimpleNamespace(shipyard_url=shipyard),
        design=SimpleNamespace(allowed_urls=list(allowed), file_root=root, fetch_timeout=timeout,
                               max_document_bytes=1024 * 1024, cache_size=0, cache_ttl=0),
        auth=SimpleNamespace(service_token="service-secret"))


def refused(resolver, href):
    with pytest.raises(BadRequest) as info:
        resolver.resolve(href)
    assert info.value.instance_reason == "DesignRefNotAllowed"
    assert "[design]" in info.value.message  # the message names the rule and its options
    return info.value


@pytest.mark.parametrize("href", ["file:///dev/zero", "file:///etc/passwd",
                                  "file:///proc/self/environ"])
def test_files_are_refused_when_no_root_is_configured(href):
    refused(DesignResolver.from_conf(conf()), href)


def test_files_outside_the_root_are_refused_even_through_dot_dot_and_symlinks(tmp_path):
    root = tmp_path / "designs"
    root.mkdir()
    (root / "zero").symlink_to("/dev/zero")
    resolver = DesignResolver.from_conf(conf(root=str(root)))
    refused(resolver, "file:///dev/zero")
    refused(resolver, f"file://{root}/../../../../etc/passwd")
    refused(resolver, f"file://{root}/zero")
    refused(resolver, f"file://{root}/%2e%2e/secret")
    refused(resolver, "file://otherhost/etc/passwd")


def test_a_file_turned_into_a_symlink_out_of_the_root_is_refused_at_the_next_read(tmp_path):
    """The root is resolved once, the named file on every read: a design read before is
    refused once its path leads out of the root."""
    root, outside = tmp_path / "designs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "site.yaml").write_bytes(DOC)
    design = root / "site.yaml"
    design.write_bytes(DOC)
    resolver = DesignResolver.from_conf(conf(root=str(root)))
    assert resolver.resolve(f"file://{design}")[0]["metadata"]["name"] == "s"
    now = [0.0]
    cached = DesignResolver(RefPolicy(file_root=str(root)), cache_ttl=30.0, clock=lambda: now[0])
    kept = cached.resolve(f"file://{design}")
    design.unlink()
    design.symlink_to(outside / "site.yaml")
    refused(resolver, f"file://{design}")
    # a cached answer is the file as it was read, served until it expires; then refused
    assert cached.resolve(f"file://{design}") is kept
    now[0] = 31.0
    refused(cached, f"file://{design}")


def test_a_fifo_under_the_root_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(BadRequest, match="is not a design document this service may read"):
        DesignResolver.from_conf(conf(root=str(tmp_path))).resolve(f"file://{tmp_path}/pipe")


@pytest.mark.parametrize("href", [
    "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:22/",
    "deckhand+http://127.0.0.1:9/api/v1.0/revisions/../../etc",
    "http://user:pw@127.0.0.1:9/api/v1.0/revisions/1/rendered-documents",
    "https://127.0.0.1:9/api/v1.0/revisions/1/rendered-documents",
    "http://127.0.0.1:9/api/v1.0/revisionsX/1",
])
def test_urls_outside_shipyard_revisions_are_refused(href):
    refused(DesignResolver.from_conf(conf()), href)


def test_a_refused_url_is_never_contacted(hostile):
    url, seen = hostile
    before = len(seen)
    refused(DesignResolver.from_conf(conf()), f"{url}/ok")
    assert len(seen) == before


def test_tokens_go_to_shipyard_only(hostile):
    url, seen = hostile
    other = url.replace("127.0.0.1", "localhost")
    resolver = DesignResolver.from_conf(conf(shipyard=url, allowed=[f"{other}/ok"]))
    ctx = RequestContext(token="caller-secret")
    resolver.resolve(f"deckhand+{url}/api/v1.0/revisions/1/rendered-documents", ctx)
    assert seen[-1][1]["X-Auth-Token"] == "caller-secret"
    resolver.resolve(f"deckhand+{url}/api/v1.0/revisions/2/rendered-documents")
    assert seen[-1][1]["X-Auth-Token"] == "service-secret"
    resolver.resolve(f"{other}/ok", ctx)
    assert "X-Auth-Token" not in seen[-1][1]
    assert seen[-1][1]["X-Context-Marker"] == ctx.marker


def test_redirects_are_not_followed(hostile):
    url, seen = hostile
    resolver = DesignResolver.from_conf(conf(allowed=[f"{url}/"]))
    before = len(seen)
    with pytest.raises(BadGateway):
        resolver.resolve(f"{url}/redirect")
    assert len(seen) == before + 1


def test_an_endless_body_stops_at_the_byte_cap(hostile):
    url, _ = hostile
    with pytest.raises(PayloadTooLarge):
        DesignResolver.from_conf(conf(allowed=[f"{url}/"])).resolve(f"{url}/endless")


def test_a_trickling_body_stops_at_the_time_cap(hostile):
    url, _ = hostile
    with pytest.raises(Timeout):
        DesignResolver.from_conf(conf(allowed=[f"{url}/"], timeout=0.3)).resolve(f"{url}/slow")


def test_a_server_silent_after_its_headers_is_a_timeout_too(hostile):
    url, _ = hostile
    with pytest.raises(Timeout):
        DesignResolver.from_conf(conf(allowed=[f"{url}/"], timeout=0.3)).resolve(f"{url}/silent")


def test_allowed_places_still_resolve(tmp_path, hostile):
    url, _ = hostile
    (tmp_path / "d.yaml").write_bytes(DOC)
    resolver = DesignResolver.from_conf(conf(shipyard=url, root=str(tmp_path)))
    assert resolver.resolve(f"file://{tmp_path}/d.yaml")[0]["schema"] == "drydock/Region/v1"
    assert resolver.resolve(f"deckhand+{url}/api/v1.0/revisions/3/rendered-documents")
    assert RefPolicy().file_root is None


@pytest.mark.parametrize("href", ["file://", "file:", "file://localhost", "file:relative"])
def test_a_file_reference_without_an_absolute_path_is_refused_even_from_the_root(
        tmp_path, monkeypatch, href):
    monkeypatch.chdir(tmp_path)  # an empty path must not mean "the working directory"
    refused(DesignResolver.from_conf(conf(root=str(tmp_path))), href)


def test_a_directory_under_the_root_is_refused(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(BadRequest, match="is not a design document this service may read"):
        DesignResolver.from_conf(conf(root=str(tmp_path))).resolve(f"file://{tmp_path}/sub")
