"""The node-facing boot action API (Airship's): the node's units and files as tar.gz, and its
report. Authenticated by the node's own key (X-Bootaction-Key), not by a token or policy."""

from __future__ import annotations

import falcon

from common.body import read_json
from common.nodenames import require_name
from drydock_api.bootactions.service import KEY_HEADER, BootActionService


class BootActionAssetsResource:
    """GET /bootactions/nodes/{hostname}/units|files: 200 application/gzip; 401 without the
    key, 403 with another, 404 for a node with no boot action context."""

    def __init__(self, service: BootActionService, asset_type: str) -> None:
        self._service = service
        self._type = asset_type

    def on_get(self, req: falcon.Request, resp: falcon.Response, hostname: str) -> None:
        hostname = require_name(hostname, "hostname")
        data = self._service.assets(hostname, req.get_header(KEY_HEADER), self._type)
        resp.content_type = "application/gzip"
        resp.set_header("Content-Disposition",
                        f'attachment; filename="{hostname}-{self._type}.tar.gz"')
        resp.data = data


class BootActionResource:
    """POST /bootactions/{action_id}: the node's report {status, details}; 200 the boot
    action; 400 bad body, 401/403 key, 404 unknown action, 409 already final."""

    def __init__(self, service: BootActionService) -> None:
        self._service = service

    def on_post(self, req: falcon.Request, resp: falcon.Response, action_id: str) -> None:
        key = req.get_header(KEY_HEADER)
        body = read_json(req, required=False)
        resp.media = self._service.report(action_id, key, body if body is not None else {})
