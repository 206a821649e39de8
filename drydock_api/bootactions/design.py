"""The design's drydock/BootAction/v1 documents, read into definitions and matched to nodes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from common.documents import Document, doc_ref
from common.jsontypes import JSON, as_list, as_str
from drydock_api.nodes.design import Design
from drydock_api.nodes.filters import UnknownNodes, select_nodes

SCHEMA = "drydock/BootAction/v1"
ASSET_TYPES = ("unit", "file", "pkg_list")
PIPELINE = ("base64_encode", "base64_decode", "utf8_encode", "utf8_decode", "template")


@dataclass(frozen=True)
class Asset:
    type: str
    path: str | None = None
    location: str | None = None
    data: JSON = None
    location_pipeline: tuple[str, ...] = ()
    data_pipeline: tuple[str, ...] = ()
    permissions: int | None = None  # octal mode ("555" in the document)


@dataclass(frozen=True)
class BootActionDef:
    name: str
    assets: tuple[Asset, ...]
    signaling: bool = True
    node_filter: JSON = None
    target_nodes: tuple[str, ...] | None = None
    source: dict[str, str] = field(default_factory=dict)

    def targets(self, design: Design) -> list[str]:
        """The nodes this action applies to: `target_nodes`, else the filter's, else all."""
        if self.target_nodes is not None:
            return [n for n in self.target_nodes if n in design.nodes]
        if self.node_filter is None:
            return list(design.nodes)
        try:
            return select_nodes(self.node_filter, design.nodes, design.rack_labels)
        except UnknownNodes:  # named at validation; such an action applies to no node
            return []


def _asset(raw: Mapping[str, JSON]) -> Asset:
    mode = raw.get("permissions")
    return Asset(type=str(raw.get("type")), path=as_str(raw.get("path")),
                 location=as_str(raw.get("location")), data=raw.get("data"),
                 location_pipeline=tuple(str(s) for s in as_list(raw.get("location_pipeline"))),
                 data_pipeline=tuple(str(s) for s in as_list(raw.get("data_pipeline"))),
                 permissions=int(str(mode), 8) if mode is not None else None)


def boot_actions(docs: list[Document]) -> list[BootActionDef]:
    """Every BootAction document of the design (schema-checked at validation)."""
    out = []
    for doc in docs:
        if doc.get("schema") != SCHEMA or not isinstance(doc.get("data"), dict):
            continue
        data = doc["data"]
        targets = data.get("target_nodes")
        out.append(BootActionDef(
            name=doc_ref(doc)["name"],
            assets=tuple(_asset(a) for a in data.get("assets") or [] if isinstance(a, dict)),
            signaling=bool(data.get("signaling", True)), node_filter=data.get("node_filter"),
            target_nodes=tuple(str(t) for t in targets) if isinstance(targets, list) else None,
            source=doc_ref(doc)))
    return out


def for_node(docs: list[Document], design: Design, node: str) -> list[BootActionDef]:
    return [ba for ba in boot_actions(docs) if node in ba.targets(design)]
