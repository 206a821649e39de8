"""A task's design is resolved once, when the API admits the task, and kept in Drydock's
database: workers read it there and never fetch the design from Shipyard again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.context import RequestContext
from drydock_api.runtime import build_runtime
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import SiteFactory, make_conf
from tests.unit.drydock.test_orchestrator import names

PATH = "/api/v1.0/revisions/7/rendered-documents"


class Shipyard:
    """Serves one revision's rendered documents, counting the reads, until stopped."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        body = yaml.safe_dump_all(docs).encode()
        self.reads = 0
        shipyard = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                shipyard.reads += 1
                self.send_response(200 if self.path == PATH else 404)
                self.send_header("Content-Type", "application/x-yaml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def shipyard() -> Iterator[Shipyard]:
    served = Shipyard(designs.simple_site(["n1", "n2"]))
    yield served
    served.stop()


def test_a_worker_runs_a_task_while_shipyard_is_unreachable(
        make_site: SiteFactory, shipyard: Shipyard, tmp_path: Path) -> None:
    site = make_site(["n1", "n2"], peers={"shipyard_url": shipyard.url})
    ref = f"deckhand+{shipyard.url}{PATH}"
    body, created = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": ref, "node_filter": names("n1"),
         "options": {}}, RequestContext(user="admin"), None)
    assert created and shipyard.reads == 1  # resolved once, by the API
    shipyard.stop()  # from now on the design URL cannot be reached
    # a worker process of its own (no cache shared with the API) on the same database
    worker_rt = build_runtime(make_conf(tmp_path, peers={"shipyard_url": shipyard.url}),
                              maas=site.maas, oob=site.oob)
    try:
        worker = worker_rt.new_worker("w2")
        assert worker.poll_once() == 1
        worker.join(30)
        task = worker_rt.service.get(body["task_id"])
    finally:
        worker_rt.stop()
        worker_rt.pool.shutdown(wait=False, cancel_futures=True)
        worker_rt.store.engine.dispose()
    assert task["status"] == "complete" and task["result"]["status"] == "success", task
    assert site.oob.power[site.address("n1")] == "off" and "id-n1" not in site.maas.machines
    assert shipyard.reads == 1


def test_the_same_revision_is_kept_once_and_read_by_every_task(
        make_site: SiteFactory, shipyard: Shipyard) -> None:
    site = make_site(["n1", "n2"], peers={"shipyard_url": shipyard.url})
    ref = f"{shipyard.url}{PATH}"
    for node in ("n1", "n2"):
        site.runtime.service.create(
            {"action": "destroy_nodes", "design_ref": ref, "node_filter": names(node),
             "options": {}}, RequestContext(user="admin"), None)
    kept = site.runtime.loader.kept_documents(ref)
    assert [d["metadata"]["name"] for d in kept if d["schema"] == "drydock/BaremetalNode/v1"] \
        == ["n1", "n2"]
    assert shipyard.reads == 1
