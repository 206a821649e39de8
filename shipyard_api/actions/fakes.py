"""An in-memory document store for unit tests of actions (revisions, tags, rendered docs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.documents import Document
from common.jsontypes import JSONObject

SITE_ACTION_TAGS = ("site-action-success", "site-action-failure")
VERSION_TAGS = {
    "committed": ("committed",),
    "successful_site_action": ("site-action-success",),
    "last_site_action": SITE_ACTION_TAGS,
}


@dataclass
class FakeDocuments:
    revisions: dict[int, list[Document]] = field(default_factory=dict)
    tag_log: list[tuple[int, str, JSONObject | None]] = field(default_factory=list)

    def commit(self, docs: list[Document]) -> int:
        rev = max(self.revisions, default=0) + 1
        self.revisions[rev] = docs
        self.tag_log.append((rev, "committed", None))
        return rev

    def revision_id(self, version: str) -> int | None:
        tags = VERSION_TAGS.get(version.replace("-", "_"), ())
        tagged = [r for r, t, _ in self.tag_log if t in tags]
        return max(tagged) if tagged else None

    def rendered_documents(self, revision_id: int, *,
                           cleartext: bool = True) -> list[Document]:
        return list(self.revisions[revision_id])

    def add_tag(self, revision_id: int, tag: str,
                data: JSONObject | None = None) -> JSONObject:
        self.tag_log.append((revision_id, tag, data))
        return {"tag": tag, "data": data or {}}

    def intermediate_commits(self, using_revision: int) -> list[int]:
        last = self.revision_id("last_site_action") or 0
        return sorted({r for r, t, _ in self.tag_log
                       if t == "committed" and r > last and r != using_revision})

    def design_ref(self, revision_id: int, base_url: str) -> str:
        return f"deckhand+{base_url}/api/v1.0/revisions/{revision_id}/rendered-documents"
