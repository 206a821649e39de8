"""The site as the web view shows it: each node's facts from Drydock, Promenade and the design.

Shipyard asks its peers server-side (the browser talks to Shipyard only); a peer that does
not answer leaves its columns unknown and is named in `problems`.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from common.clients.drydock import Node
from common.clients.promenade import NodeView
from common.context import RequestContext
from common.errors import BerthError
from shipyard_api.actions.design import etcd_membership
from shipyard_api.actions.ports import DocumentsPort
from shipyard_api.clients.ports import DrydockPort, PromenadePort, node_ready

FILTERS = ("q", "rack", "power", "maas", "ready", "cordoned", "etcd", "retired")


@dataclass
class SiteFacts:
    revision: int | None
    nodes: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def racks(self) -> list[str]:
        return sorted({str(n["rack"]) for n in self.nodes if n.get("rack")})


def _yes_no(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def node_row(drydock: Node, kube: NodeView | None | BerthError, kube_known: bool,
             etcd: list[str]) -> dict[str, str]:
    """One node's row: every value a short string (filters compare them as typed).
    `kube` is Promenade's view of the node, None when Kubernetes does not know it."""
    if isinstance(kube, dict):
        ready = "yes" if node_ready(kube) else "no"
        cordoned = _yes_no(bool(kube.get("cordoned")))
    else:
        ready = cordoned = "absent" if kube_known else "unknown"
    reboot = ("pending since " + str(drydock["pending_reboot_since"])
              if drydock.get("pending_reboot_since") else "")
    if drydock.get("reboot_error"):
        reboot = (reboot + "; " if reboot else "") + f"error: {drydock['reboot_error']}"
    return {
        "name": str(drydock.get("hostname") or drydock.get("name") or ""),
        "rack": drydock.get("rack") or "",
        "power": drydock.get("power_state") or "unknown",
        "power_error": drydock.get("power_error") or "",
        "maas": drydock.get("maas_status") or "absent",
        "ready": ready, "cordoned": cordoned,
        "etcd": ", ".join(etcd) if etcd else "no",
        "retired": "yes" if drydock.get("retired") else "no",
        "retired_reason": drydock.get("retired_reason") or "",
        "reboot": reboot,
    }


def matches(row: Mapping[str, object], filters: Mapping[str, str]) -> bool:
    """Whether a row passes every filter (q: name substring; others: equal, case-blind;
    etcd=yes matches any membership)."""
    for key, wanted in filters.items():
        wanted = wanted.strip().lower()
        if not wanted:
            continue
        value = str(row.get("name" if key == "q" else key, "")).lower()
        if key == "q":
            if wanted not in value:
                return False
        elif key == "etcd" and wanted == "yes":
            if value == "no":
                return False
        elif value != wanted:
            return False
    return True


class SiteView:
    """Gathers the facts of the committed design's nodes (Drydock), their Kubernetes state
    (Promenade, a few nodes at a time) and etcd membership (the design)."""

    def __init__(self, drydock: DrydockPort, promenade: PromenadePort,
                 documents: DocumentsPort, public_url: str, parallel: int = 8) -> None:
        self._drydock, self._promenade = drydock, promenade
        self._documents, self._public_url = documents, public_url
        self._parallel = parallel

    @property
    def drydock(self) -> DrydockPort:
        return self._drydock

    def facts(self, ctx: RequestContext) -> SiteFacts:
        revision = self._documents.revision_id("committed")
        out = SiteFacts(revision)
        ref = self._documents.design_ref(revision, self._public_url) if revision else None
        etcd = etcd_membership(self._documents.rendered_documents(revision, cleartext=False)) \
            if revision else {}
        try:
            nodes = self._drydock.nodes(ref, ctx=ctx)
        except BerthError as exc:
            out.problems.append(f"Drydock did not answer: {exc.message}")
            return out
        names = [str(n.get("hostname") or n.get("name")) for n in nodes]
        kube = self._kube(names, ctx, out.problems)
        out.nodes = [node_row(n, kube[name], not isinstance(kube[name], BerthError),
                              etcd.get(name, []))
                     for n, name in zip(nodes, names, strict=True)]
        return out

    def _kube(self, names: list[str], ctx: RequestContext,
              problems: list[str]) -> dict[str, NodeView | None | BerthError]:
        def one(name: str) -> NodeView | None | BerthError:
            try:
                return self._promenade.node_status(name, ctx=ctx)
            except BerthError as exc:
                return exc

        if not names:
            return {}
        with ThreadPoolExecutor(max_workers=min(self._parallel, len(names))) as pool:
            answers = dict(zip(names, pool.map(one, names), strict=True))
        failed = [a for a in answers.values() if isinstance(a, BerthError)]
        if failed:
            problems.append(f"Promenade did not answer for {len(failed)} node(s): "
                            f"{failed[0].message}")
        return answers
