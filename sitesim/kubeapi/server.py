"""Serving the simulated API over HTTP (werkzeug, threaded) and writing a kubeconfig."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from sitesim.kubeapi.wsgi import make_wsgi_app

if TYPE_CHECKING:
    from sitesim.kubeapi.cluster import KubeCluster


class _QuietHandler(WSGIRequestHandler):
    """No access log line per request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class KubeServer:
    """A running API server: `.port`, `.url`, `.shutdown()`."""

    def __init__(self, server: BaseWSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.host = str(server.host)
        self.port = int(server.port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def shutdown(self) -> None:
        """Stop accepting requests and wait for the serving thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def serve(cluster: KubeCluster, host: str = "127.0.0.1", port: int = 0) -> KubeServer:
    """Serve the cluster's API on `host:port` (0: a free port) from a background thread."""
    server = make_server(host, port, make_wsgi_app(cluster), threaded=True,
                         request_handler=_QuietHandler)
    server.daemon_threads = True  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name=f"kube-api-{server.port}", daemon=True)
    thread.start()
    return KubeServer(server, thread)


def kubeconfig(server_url: str) -> dict[str, Any]:
    """A kubeconfig for the simulated API: plain HTTP, no credentials."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sitesim", "cluster": {"server": server_url}}],
        "users": [{"name": "sitesim-admin", "user": {}}],
        "contexts": [{"name": "sitesim", "context": {
            "cluster": "sitesim", "user": "sitesim-admin", "namespace": "default"}}],
        "current-context": "sitesim",
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, server_url: str) -> Path:
    """Write the kubeconfig for `server_url` to `path` (parents created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig(server_url), sort_keys=False))
    return target
