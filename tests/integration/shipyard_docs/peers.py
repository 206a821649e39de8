"""A fake Drydock/Promenade peer: validatedesign fetches the design it is given."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from common.context import RequestContext
from common.designref import REVISIONS_PATH, DesignResolver, RefPolicy, href_of
from common.errors import BerthError
from common.status import status_body, validation_message


def shipyard_resolver(href: str) -> DesignResolver:
    """A resolver allowing the revisions of the Shipyard that `href` names (as the real
    peers allow their configured Shipyard)."""
    shipyard = href.removeprefix("deckhand+").split(REVISIONS_PATH)[0]
    return DesignResolver(RefPolicy(allowed_urls=(shipyard + REVISIONS_PATH,),
                                    token_url=shipyard + "/"), cache_size=0)


class FakePeer:
    """Serves `POST /api/v1.0/validatedesign` and health on a free loopback port.

    It resolves the design reference (as the real peers do) and refuses a design holding a
    document named `invalid-for-<name>`; `hold` makes it wait until released.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[dict[str, Any]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(204)
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                code, answer = peer.validate(body, dict(self.headers))
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def validate(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        self.entered.set()
        self.release.wait(30)
        ctx = RequestContext(marker=headers.get("X-Context-Marker", ""),
                             token=headers.get("X-Auth-Token"))
        call: dict[str, Any] = {"href": body.get("href"), "marker": ctx.marker}
        self.calls.append(call)
        try:
            docs = shipyard_resolver(href_of(body)).resolve(body, ctx)
        except BerthError as exc:
            call["error"] = exc.message
            return 400, status_body(400, f"{self.name} cannot read the design",
                                    messages=exc.messages)
        call["docs"] = docs
        bad = [d for d in docs if d["metadata"]["name"] == f"invalid-for-{self.name}"]
        if bad:
            return 400, status_body(400, "Invalid design", reason="InvalidDesign", messages=[
                validation_message(f"{self.name} refuses {bad[0]['schema']}",
                                   name=f"{self.name}-check")])
        return 200, status_body(200, "Valid design")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
