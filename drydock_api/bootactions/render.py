"""Rendering a node's boot action assets: the template context (Airship's names), the location
and data pipelines, and the tar.gz the node downloads."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import yaml
from jinja2 import TemplateError
from jinja2.sandbox import SandboxedEnvironment

from common.documents import Document, doc_ref
from common.jsontypes import JSONObject, as_list, as_object, member
from drydock_api.bootactions.design import Asset
from drydock_api.nodes.design import NodeDef

NETWORK = "drydock/Network/v1"
Fetch = Callable[[str], bytes]  # an asset location → its content (AssetError when it fails)


class AssetError(Exception):
    """An asset that cannot be rendered: its location failed, a pipeline segment failed."""


@dataclass(frozen=True)
class Rendered:
    path: str
    type: str
    content: bytes
    permissions: int | None


def _networks(docs: list[Document]) -> dict[str, JSONObject]:
    out: dict[str, JSONObject] = {}
    for doc in docs:
        if doc.get("schema") == NETWORK and isinstance(doc.get("data"), dict):
            out[doc_ref(doc)["name"]] = doc["data"]
    return out


def node_context(node: NodeDef, docs: list[Document]) -> JSONObject:
    """Airship's `node` context: hostname, domain, tags, labels, network.<name>.{ip, cidr,
    dns_suffix} and network.default (the primary network: `primary_network`, else the first
    address not on the oob network)."""
    networks = _networks(docs)
    addressing = as_list(node.data.get("addressing"))
    oob_net = member(node.data, "oob", "network")
    primary = node.data.get("primary_network") or next(
        (a.get("network") for a in addressing if isinstance(a, dict)
         and a.get("network") != oob_net), None)
    net_ctx: JSONObject = {}
    for entry in addressing:
        if not isinstance(entry, dict) or entry.get("address") in (None, "dhcp"):
            continue
        spec = networks.get(str(entry.get("network")), {})
        dns = as_object(spec.get("dns"))
        net_ctx[str(entry["network"])] = {"ip": entry["address"], "cidr": spec.get("cidr"),
                                          "dns_suffix": dns.get("domain")}
        if entry.get("network") == primary:
            net_ctx["default"] = net_ctx[str(entry["network"])]
    domain = member(net_ctx, "default", "dns_suffix") or "local"
    return {"hostname": node.name, "domain": domain, "tags": [*node.tags],
            "labels": {**node.labels}, "network": net_ctx, "interfaces": {}}


def action_context(action_id: str, action_key: str, report_url: str,
                   design_ref: str) -> JSONObject:
    return {"action_id": action_id, "action_key": action_key,
            "report_url": report_url, "design_ref": design_ref}


_ENV = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)


Data = str | bytes  # an asset's content between pipeline segments


def _template(data: Data, ctx: Mapping[str, object]) -> str:
    text = data.decode() if isinstance(data, bytes) else str(data)
    return _ENV.from_string(text).render(**ctx)


def _segment(name: str, data: Data, ctx: Mapping[str, object]) -> Data:
    if name == "template":
        return _template(data, ctx)
    if name == "base64_decode":
        return base64.b64decode(data)
    if name == "base64_encode":
        return base64.b64encode(data if isinstance(data, bytes) else str(data).encode())
    if name == "utf8_decode":
        return data.decode("utf-8") if isinstance(data, bytes) else data
    if name == "utf8_encode":
        return data.encode("utf-8") if isinstance(data, str) else data
    raise AssetError(f"Boot action pipeline segment {name} unknown")


def run_pipeline(data: Data, pipeline: tuple[str, ...], ctx: Mapping[str, object]) -> Data:
    for name in pipeline:
        try:
            data = _segment(name, data, ctx)
        except AssetError:
            raise
        except (TemplateError, ValueError, TypeError) as exc:
            raise AssetError(f"pipeline segment {name} failed: {type(exc).__name__}: "
                             f"{exc}") from exc
    return data


def render_asset(asset: Asset, ctx: Mapping[str, object], fetch: Fetch) -> Rendered:
    """One asset's bytes: its location (after location_pipeline) fetched, or its data; then
    data_pipeline. pkg_list content is the package mapping as YAML."""
    if asset.location is not None:
        location = str(run_pipeline(asset.location, asset.location_pipeline, ctx)).strip()
        data: Data = fetch(location)
    elif isinstance(asset.data, dict):
        data = yaml.safe_dump(asset.data).encode()
    else:
        data = str(asset.data or "").encode()
    if asset.type != "pkg_list":
        data = run_pipeline(data, asset.data_pipeline, ctx)
    content = data.encode() if isinstance(data, str) else bytes(data)
    return Rendered(path=asset.path or "", type=asset.type, content=content,
                    permissions=asset.permissions)


def tarball(assets: list[Rendered]) -> bytes:
    """The assets (not package lists) at their paths with their modes (0600 by default),
    owned by root, gzip-compressed (GNU tar, as Airship's Drydock builds it)."""
    out = io.BytesIO()
    with tarfile.open(mode="w:gz", fileobj=out, format=tarfile.GNU_FORMAT) as tar:
        for asset in assets:
            if asset.type == "pkg_list":
                continue
            info = tarfile.TarInfo(name=asset.path)
            info.size = len(asset.content)
            info.mode = asset.permissions if asset.permissions is not None else 0o600
            info.uid = info.gid = 0
            tar.addfile(info, io.BytesIO(asset.content))
    return out.getvalue()
