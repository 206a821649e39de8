"""The simulated site's Redfish BMC (sushy-tools with the site's drivers) served alone on a free
port from a site YAML, without Kubernetes or MAAS; and a WSGI filter that makes it a broken BMC."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sitesim.bmc.redfish import RedfishBmc, system_uuid
from sitesim.bmc.sushy_drivers import install_drivers
from sitesim.model import SiteModel
from sitesim.ports import free_port
from sitesim.scheduler import Scheduler
from sitesim.servers import ServerThread
from sitesim.siteconfig import NodeSpec, parse_site

FAST = {"power": 0.01, "graceful_shutdown": 0.01, "erase": 0.05}


@dataclass
class SiteBmc:
    url: str
    model: SiteModel
    app: RedfishBmc
    nodes: dict[str, NodeSpec]

    def system(self, node: str) -> str:
        return system_uuid(self.model.spec.name, node)

    def serve(self, app: Callable[..., Iterable[bytes]]) -> ServerThread:
        """Another port in front of this BMC (e.g. the app wrapped in a filter)."""
        return ServerThread(app, free_port(), name="redfish-filter").start()


@contextmanager
def site_bmc(site_yaml: Path) -> Iterator[SiteBmc]:
    """The site's Redfish nodes behind one emulator (per-system credentials), as `berth up`
    serves them; stopped on exit."""
    spec = parse_site(yaml.safe_load(site_yaml.read_text()), source=str(site_yaml))
    spec = dataclasses.replace(spec, timings=dataclasses.replace(spec.timings, **FAST))
    scheduler = Scheduler()
    model = SiteModel(spec, scheduler)
    nodes = [n for n in spec.nodes if n.bmc.type == "redfish"]
    app = RedfishBmc(model, nodes, install_drivers())
    server = ServerThread(app, free_port(), name="redfish").start()
    try:
        yield SiteBmc(server.url, model, app, {n.name: n for n in nodes})
    finally:
        server.shutdown()
        scheduler.stop()


class HideResetTypes:
    """WSGI filter: the BMC behind it no longer lists `hidden` among the reset types of its
    Systems (`ResetType@Redfish.AllowableValues`), as a BMC that cannot do them would."""

    def __init__(self, app: Callable[..., Iterable[bytes]], *hidden: str) -> None:
        self.app, self.hidden = app, set(hidden)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured.update(status=status, headers=headers)
            return lambda data: None

        body = b"".join(self.app(environ, capture))
        try:
            doc = json.loads(body) if body else None
        except ValueError:
            doc = None
        reset = ((doc or {}).get("Actions") or {}).get("#ComputerSystem.Reset") \
            if isinstance(doc, dict) else None
        if isinstance(reset, dict) and "ResetType@Redfish.AllowableValues" in reset:
            reset["ResetType@Redfish.AllowableValues"] = [
                v for v in reset["ResetType@Redfish.AllowableValues"] if v not in self.hidden]
            body = json.dumps(doc).encode()
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        start_response(captured["status"], headers + [("Content-Length", str(len(body)))])
        return [body]
