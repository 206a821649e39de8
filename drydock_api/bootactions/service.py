"""Boot actions of a deploy: made when Drydock deploys a node, served to the node with its
key (X-Bootaction-Key), reported by the node, shown on the node and the task."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from ulid import ULID

from common.bodyschema import require_schema
from common.context import RequestContext
from common.designref import href_of
from common.documents import Document
from common.errors import (
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    Unauthenticated,
)
from common.jsontypes import JSON, JSONObject, as_list, as_object, as_str
from drydock_api.bootactions import design as ba_design
from drydock_api.bootactions import render
from drydock_api.bootactions.store import (
    FAILURE,
    BootActionStore,
    Context,
    action_view,
    key_hash,
)
from drydock_api.nodes.design import Design, parse_design

KEY_HEADER = "X-Bootaction-Key"
ASSET_TYPES = ("unit", "file", "pkg_list", "all")
STATUSES = ("Success", "Failure", "success", "failure")


class AssetRenderFailed(InternalError):
    reason, title, retry = "BootActionAssetError", "Boot action asset failed", False


class BootActionService:
    def __init__(self, store: BootActionStore,
                 documents: Callable[[JSON, RequestContext | None], list[Document]],
                 fetch: render.Fetch, report_url: str, *,
                 new_key: Callable[[], str] = lambda: secrets.token_hex(32),
                 new_id: Callable[[], str] = lambda: str(ULID())) -> None:
        self._store = store
        self._documents = documents
        self._fetch = fetch
        self.report_url = report_url
        self._new_key = new_key
        self._new_id = new_id

    def _design(self, ref: JSON, ctx: RequestContext | None) -> tuple[list[Document], Design]:
        docs = self._documents(ref, ctx)
        return docs, parse_design(docs)

    # --- at deploy -------------------------------------------------------------------------
    def begin(self, node: str, task_id: str, design_ref: JSON,
              ctx: RequestContext | None) -> tuple[str, list[JSONObject]] | None:
        """A deploy of `node`: its boot actions recorded under a new key (returned, with the
        actions; the key is kept only as its hash), or None when none applies to it."""
        docs, design = self._design(design_ref, ctx)
        actions = ba_design.for_node(docs, design, node)
        if not actions:
            return None
        key = self._new_key()
        rows = [(self._new_id(), a.name, a.signaling) for a in actions]
        self._store.begin(node, task_id, design_ref, key, rows)
        return key, [{"action_id": aid, "action_name": name, "signaling": sig}
                     for aid, name, sig in rows]

    # --- the node's calls ------------------------------------------------------------------
    def _check_key(self, node: str, expected: str, key: str | None) -> None:
        if not key:
            self._store.refuse(node, f"no {KEY_HEADER}")
            raise Unauthenticated(f"No {KEY_HEADER}")
        if not secrets.compare_digest(expected, key_hash(key)):
            self._store.refuse(node, f"invalid {KEY_HEADER}")
            raise Forbidden(f"Invalid {KEY_HEADER}")

    def _context(self, hostname: str) -> Context:
        found = self._store.context(hostname)
        if found is None:
            raise NotFound(f"Error locating boot action for {hostname}")
        return found

    def assets(self, hostname: str, key: str | None, asset_type: str) -> bytes:
        """The node's assets of `asset_type` (unit, file, pkg_list or all) as tar.gz. An asset
        that cannot be rendered fails its boot action (the cause is its report) and 500."""
        found = self._context(hostname)
        self._check_key(hostname, found.key_hash, key)
        docs, design = self._design(found.design_ref, None)
        node = design.nodes.get(hostname)
        if node is None:
            raise NotFound(f"{hostname} is not in the design of its deploy")
        by_name = {a.name: a for a in ba_design.boot_actions(docs)}
        node_ctx = render.node_context(node, docs)
        ref = href_of(found.design_ref)
        out: list[render.Rendered] = []
        for row in self._store.actions(context=found):
            action = by_name.get(row.name)
            if action is None:
                continue
            ctx = {"node": node_ctx, "action": render.action_context(
                row.action_id, key or "", self.report_url, ref)}
            for asset in action.assets:
                if asset_type not in ("all", asset.type):
                    continue
                try:
                    out.append(render.render_asset(asset, ctx, self._fetch))
                except render.AssetError as exc:
                    text = f"Drydock could not render asset {asset.path or asset.type} of " \
                           f"boot action {row.name}: {exc}"
                    self._store.report(row.action_id, FAILURE,
                                       [{"message": text, "error": True}], "drydock")
                    raise AssetRenderFailed(text) from exc
        return render.tarball(out)

    def report(self, action_id: str, key: str | None, body: JSON) -> JSONObject:
        row = self._store.action(action_id)
        if row is None:
            raise NotFound(f"Boot action {action_id} not found")
        self._check_key(row.node, row.key_hash, key)
        require_schema("drydock", "BootActionReport", body, "Error processing body.",
                       reason="BadRequest")
        given = as_object(body)
        status = as_str(given.get("status"))
        updated = self._store.report(action_id, status.lower() if status else None,
                                     [as_object(d) for d in as_list(given.get("details"))],
                                     "node")
        if updated is None:
            raise Conflict(f"Action {action_id} status finalized, not available for update.",
                           reason="BootActionFinal")
        return action_view(updated)

    # --- views -------------------------------------------------------------------------------
    def node_view(self, hostname: str) -> JSONObject:
        """The node's boot actions of its latest deploy, and requests refused lately."""
        found = self._store.context(hostname)
        if found is None:
            return {"bootactions": [], "bootaction_refusals": []}
        rows = self._store.actions(context=found)
        return {"bootactions": [action_view(r) for r in rows],
                "bootaction_refusals": [*found.refusals]}

    def task_view(self, task_id: str) -> list[JSONObject]:
        return [action_view(r) for r in self._store.actions(task_id=task_id)]
