"""Threaded werkzeug servers on loopback, run in the background and shut down on demand."""

from __future__ import annotations

import logging
import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server


class _QuietHandler(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        logging.getLogger("sitesim.http").debug(message, *args)


class ServerThread:
    """One WSGI app served by werkzeug on 127.0.0.1:`port` (0 picks a free port)."""

    def __init__(self, app: Any, port: int = 0, host: str = "127.0.0.1", name: str = "") -> None:
        self._server: BaseWSGIServer = make_server(host, port, app, threaded=True,
                                                   request_handler=_QuietHandler)
        self._server.daemon_threads = True  # type: ignore[attr-defined]
        self.host = host
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name=f"sitesim-{name or port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        self._thread.start()
        return self

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
