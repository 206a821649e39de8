"""Site statuses: the nodes' provisioning status and power state as Drydock sees them."""

from __future__ import annotations

from collections.abc import Sequence

from common.context import RequestContext
from common.errors import BadRequest
from common.jsontypes import JSONObject
from shipyard_api.actions.ports import DocumentsPort
from shipyard_api.clients.ports import DrydockPort

FILTERS = ("nodes-provision-status", "machines-power-state")
# The keys Airship's server answers for each filter (its status_helper); Berth answers both.
AIRSHIP_KEYS = {"nodes-provision-status": "nodes_provision_status",
                "machines-power-state": "machines_powerstate"}


class SiteStatuses:
    def __init__(self, drydock: DrydockPort, documents: DocumentsPort, public_url: str) -> None:
        self._drydock = drydock
        self._documents = documents
        self._public_url = public_url

    def get(self, filters: Sequence[str], ctx: RequestContext) -> dict[str, list[JSONObject]]:
        """One list per filter (both when none is given), under the filter's name and under
        the key Airship's server uses."""
        unknown = [f for f in filters if f not in FILTERS]
        if unknown:
            raise BadRequest(f"Unknown filter(s) {', '.join(unknown)}; use "
                             f"{' or '.join(FILTERS)}", reason="InvalidFilter")
        chosen = list(dict.fromkeys(filters)) or list(FILTERS)
        revision = self._documents.revision_id("committed")
        ref = self._documents.design_ref(revision, self._public_url) if revision else None
        nodes = self._drydock.nodes(ref, ctx=ctx)
        out: dict[str, list[JSONObject]] = {}
        if "nodes-provision-status" in chosen:
            out["nodes-provision-status"] = out[AIRSHIP_KEYS["nodes-provision-status"]] = [
                {"hostname": n.get("hostname"), "status": n.get("maas_status") or "Absent",
                 "retired": bool(n.get("retired"))} for n in nodes]
        if "machines-power-state" in chosen:
            out["machines-power-state"] = out[AIRSHIP_KEYS["machines-power-state"]] = [
                {"hostname": n.get("hostname"), "power_state": n.get("power_state") or "unknown",
                 "error": n.get("power_error")} for n in nodes]
        return out
