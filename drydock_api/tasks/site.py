"""verify_site and prepare_site: site-level actions against MAAS (no per-node steps)."""

from __future__ import annotations

from common.documents import Document
from common.errors import BerthError
from common.jsontypes import JSONObject, as_list, member
from common.status import Message, simple_message
from drydock_api.nodes.design import REGION, parse_design
from drydock_api.tasks.context import SiteContext, SiteOutcome

# MAAS configuration names set from the Region's `boot` settings (or the nodes' image).
BOOT_CONFIG = {"default_osystem": "default_osystem",
               "default_distro_series": "default_distro_series",
               "commissioning_distro_series": "commissioning_distro_series",
               "default_min_hwe_kernel": "default_min_hwe_kernel"}


def verify_site(ctx: SiteContext) -> SiteOutcome:
    """MAAS reachable and our API key accepted."""
    try:
        text = ctx.ports.site.check()
    except BerthError as exc:
        return SiteOutcome(False, f"MAAS check failed: {exc.message}",
                           [simple_message(f"MAAS: {exc.message}", context_type="site")])
    return SiteOutcome(True, text, [simple_message(f"MAAS: {text}", error=False,
                                                   context_type="site")])


def _region(docs: list[Document]) -> JSONObject:
    for doc in docs:
        if doc.get("schema") == REGION and isinstance(doc.get("data"), dict):
            return dict(doc["data"])
    return {}


def wanted_tags(docs: list[Document]) -> dict[str, str]:
    """Tag name → comment: the Region's tag_definitions plus every tag a node carries."""
    out: dict[str, str] = {}
    for entry in as_list(_region(docs).get("tag_definitions")):
        if isinstance(entry, dict) and entry.get("tag"):
            out[str(entry["tag"])] = str(entry.get("definition") or entry.get("comment") or "")
        elif isinstance(entry, str):
            out[entry] = ""
    for node in parse_design(docs).nodes.values():
        for tag in node.tags:
            out.setdefault(tag, "node tag from the design")
    return out


def wanted_config(docs: list[Document]) -> dict[str, str]:
    """MAAS boot settings: Region `boot: {default_distro_series, ...}`, else the image the
    nodes use (when they all use one)."""
    boot = _region(docs).get("boot") or {}
    out = {BOOT_CONFIG[k]: str(v) for k, v in boot.items()
           if k in BOOT_CONFIG and v} if isinstance(boot, dict) else {}
    images = {str(member(n.data, "platform", "image") or "")
              for n in parse_design(docs).nodes.values()} - {""}
    if "default_distro_series" not in out and len(images) == 1:
        out["default_distro_series"] = images.pop()
    return out


def prepare_site(ctx: SiteContext) -> SiteOutcome:
    """Create missing tags, apply boot settings; each change is one message."""
    port = ctx.ports.site
    messages: list[Message] = []
    try:
        have = set(port.tags())
        for tag, comment in sorted(wanted_tags(ctx.documents).items()):
            if tag in have:
                continue
            port.create_tag(tag, comment)
            messages.append(simple_message(f"Created MAAS tag {tag}", error=False))
        for name, value in sorted(wanted_config(ctx.documents).items()):
            if port.get_config(name) == value:
                continue
            port.set_config(name, value)
            messages.append(simple_message(f"Set MAAS {name} = {value}", error=False))
    except BerthError as exc:
        messages.append(simple_message(f"prepare_site: {exc.message}"))
        return SiteOutcome(False, f"prepare_site failed: {exc.message}", messages)
    if not messages:
        messages.append(simple_message("MAAS already has the design's tags and boot settings",
                                       error=False))
    return SiteOutcome(True, f"prepare_site: {len(messages)} change(s)"
                       if messages[0]["message"].startswith(("Created", "Set")) else
                       "prepare_site: nothing to change", messages)
