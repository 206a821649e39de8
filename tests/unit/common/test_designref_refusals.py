"""Design references the services refuse: file:// serves only design documents (never the
service's own files) and answers alike whether a refused file exists or not; a Shipyard
revision id out of range, or a document server's 400, is the reference's fault (400)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from oslo_config import cfg
from oslo_policy import opts as policy_opts

from common import config
from common.designref import DesignResolver, RefPolicy
from common.errors import BadRequest

DOCS = """---
schema: drydock/Region/v1
metadata: {schema: metadata/Document/v1, name: site}
data: {}
"""
BIG = "1" * 1000


def service_conf(root: Path) -> Any:
    """A service's options as they are in production: its token file and SQLite database
    lie under the directory design references may read from."""
    conf = cfg.ConfigOpts()
    config.register_common(conf)
    conf([], default_config_files=[])
    policy_opts.set_defaults(conf)  # registers the options; a policy_file here would
    # change oslo.policy's default for every later ConfigOpts of the process
    conf.set_override("policy_file", str(root / "policy.yaml"), group="oslo_policy")
    conf.set_override("file_root", str(root), group="design")
    conf.set_override("token_file", str(root / "tokens.yaml"), group="auth")
    conf.set_override("connection", f"sqlite:///{root}/service.db", group="database")
    return conf


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "design.yaml").write_text(DOCS)
    (tmp_path / "tokens.yaml").write_text("s3cret: {user: admin, roles: [admin]}\n")
    (tmp_path / "policy.yaml").write_text('"shipyard:create_action": "@"\n')
    (tmp_path / "service.db").write_bytes(b"SQLite format 3\0")
    (tmp_path / "notes.txt").write_text(DOCS)
    (tmp_path / "tokens-link.yaml").symlink_to(tmp_path / "tokens.yaml")
    (tmp_path / "db-link.yaml").symlink_to(tmp_path / "service.db")
    (tmp_path / "dir.yaml").mkdir()
    return tmp_path


def refusal(resolver: DesignResolver, href: str) -> tuple[int, str, str]:
    with pytest.raises(BadRequest) as info:
        resolver.resolve(href)
    body = info.value.to_status()
    return body["code"], body["reason"], body["message"].replace(href, "<href>")


def test_only_design_documents_are_served_and_refusals_do_not_tell_what_exists(
        root: Path) -> None:
    resolver = DesignResolver(RefPolicy.from_conf(service_conf(root)), cache_size=0)
    assert resolver.resolve(f"file://{root}/design.yaml")[0]["metadata"]["name"] == "site"
    refused = {name: refusal(resolver, f"file://{root}/{name}") for name in (
        "tokens.yaml", "policy.yaml", "service.db", "notes.txt", "tokens-link.yaml",
        "db-link.yaml", "dir.yaml", "absent.yaml", "absent.txt")}
    refused["outside"] = refusal(resolver, "file:///etc/passwd")
    assert len(set(refused.values())) == 1, refused
    code, reason, message = next(iter(refused.values()))
    assert (code, reason) == (400, "DesignRefNotAllowed")
    assert "s3cret" not in message and "No such file" not in message


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(self.path)
            body = json.dumps({"kind": "Status", "code": 400, "reason": "InvalidRevision",
                               "message": "Revision id must be an integer"}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def shipyard_resolver(host: str) -> DesignResolver:
    return DesignResolver(RefPolicy(allowed_urls=(f"http://{host}/api/v1.0/revisions/",),
                                    token_url=f"http://{host}/"), cache_size=0)


@pytest.mark.parametrize("revision", [BIG, "0", "2147483648", "-1", "x1", "%31" * 12, "١"])
def test_a_revision_id_shipyard_cannot_hold_is_400_before_any_fetch(
        server: tuple[str, list[str]], revision: str) -> None:
    host, seen = server
    href = f"deckhand+http://{host}/api/v1.0/revisions/{revision}/rendered-documents"
    with pytest.raises(BadRequest) as info:
        shipyard_resolver(host).resolve(href)
    assert info.value.code == 400 and info.value.instance_reason == "InvalidDesignRef"
    assert seen == []
    assert len(info.value.to_status()["message"]) < 600


def test_a_document_servers_400_is_a_bad_reference_not_a_bad_gateway(
        server: tuple[str, list[str]]) -> None:
    host, seen = server
    href = f"deckhand+http://{host}/api/v1.0/revisions/7/rendered-documents"
    with pytest.raises(BadRequest) as info:
        shipyard_resolver(host).resolve(href)
    assert info.value.code == 400 and seen == ["/api/v1.0/revisions/7/rendered-documents"]
    assert "Revision id must be an integer" in info.value.to_status()["message"]
