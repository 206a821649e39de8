"""Loads a task's design from its design reference (cached by href in the resolver); the API
keeps the design of each task it admits (by digest, recorded on the task), and workers read
exactly that kept design."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from cachetools import LRUCache

from common.context import RequestContext
from common.designref import DesignResolver, href_of
from common.documents import Document
from common.errors import NotFound
from common.jsontypes import JSON
from drydock_api.db.designs import DesignStore
from drydock_api.db.models import TaskRow
from drydock_api.nodes.design import Design, parse_design

LOG = logging.getLogger(__name__)


@dataclass
class Kept:
    """The documents kept under one digest, and the design parsed from them once asked."""

    docs: list[Document]
    design: Design | None = None


class DesignLoader:
    """Documents come from the resolver's cache; the design parsed from a cached list of
    documents is kept beside it, so a 10,000-node design is parsed once per fetch, not once
    per request. With a `kept` store, `admit` (task creation) stores what it resolved and
    `task_documents`/`task_design` (workers) read only that, by the task's digest."""

    def __init__(self, resolver: DesignResolver, cache_size: int = 8,
                 kept: DesignStore | None = None) -> None:
        self._resolver = resolver
        self._kept = kept
        self._parsed: LRUCache[tuple[str, str], tuple[list[Document], Design]] = \
            LRUCache(cache_size)
        # href -> the documents last kept and their digest
        self._admitted: LRUCache[str, tuple[list[Document], str]] = LRUCache(cache_size)
        self._by_digest: LRUCache[str, Kept] = LRUCache(cache_size)  # one entry per digest
        self._lock = threading.Lock()

    def check(self, ref: JSON) -> str:
        """The href of `ref` when design references may point there (400 otherwise); nothing
        is read, so a task whose design is only read later is refused at creation too."""
        return self._resolver.check(ref)

    def documents(self, ref: JSON, ctx: RequestContext | None = None) -> list[Document]:
        return self._resolver.resolve(ref, ctx)

    def design(self, ref: JSON, ctx: RequestContext | None = None) -> Design:
        return self._parse("fetched", href_of(ref), self.documents(ref, ctx))

    def admit(self, ref: JSON, ctx: RequestContext | None = None) -> tuple[Design, str | None]:
        """At task creation: the design resolved once and kept for the task's workers, and the
        digest the task records (None without a store). The digest of documents still in the
        resolver's cache is not computed again."""
        docs, href = self.documents(ref, ctx), href_of(ref)
        digest = None
        if self._kept is not None:
            with self._lock:
                hit = self._admitted.get(href)
            known = hit[1] if hit is not None and hit[0] is docs else None
            digest = self._kept.keep(href, docs, known)
            with self._lock:
                self._admitted[href] = (docs, digest)
        return self._parse("fetched", href, docs), digest

    def kept_documents(self, ref: JSON, ctx: RequestContext | None = None,
                       digest: str | None = None) -> list[Document]:
        """The documents kept under `digest` when the task was admitted: exactly those, never
        fetched (a digest names one content: once read, no query is needed). A task admitted
        before tasks recorded a digest reads the design last kept for its href, else has it
        fetched and kept now."""
        if self._kept is None:
            return self.documents(ref, ctx)
        if digest is None:
            digest = self._kept.latest(href_of(ref))
            if digest is None:
                LOG.info("No design kept for %s (a task admitted before designs were kept): "
                         "fetching it once", href_of(ref))
                docs = self.documents(ref, ctx)
                return self._remember(self._kept.keep(href_of(ref), docs), docs)
        return self._kept_by_digest(digest).docs

    def _kept_by_digest(self, digest: str) -> Kept:
        with self._lock:
            hit = self._by_digest.get(digest)
        if hit is not None:
            return hit
        assert self._kept is not None
        docs_kept = self._kept.documents(digest)
        if docs_kept is None:
            raise NotFound(f"The design this task was admitted with (digest {digest[:12]}) "
                           "is no longer kept", reason="DesignNotKept")
        self._remember(digest, docs_kept)
        with self._lock:
            return self._by_digest.get(digest) or Kept(docs_kept)

    def task_documents(self, task: TaskRow, ctx: RequestContext) -> list[Document]:
        """A task's design documents, as admitted (what the orchestrator reads)."""
        return self.kept_documents(task.design_ref, ctx, task.design_digest)

    def task_design(self, task: TaskRow, ctx: RequestContext) -> Design:
        """The design parsed once per digest from the documents kept under it."""
        if self._kept is None or not task.design_digest:
            docs = self.task_documents(task, ctx)
            return self._parse("kept", href_of(task.design_ref), docs)
        kept = self._kept_by_digest(task.design_digest)
        if kept.design is None:
            kept.design = parse_design(kept.docs)  # two threads may both parse: same design
        return kept.design

    def _remember(self, digest: str, docs: list[Document]) -> list[Document]:
        with self._lock:
            if digest not in self._by_digest:
                self._by_digest[digest] = Kept(docs)
        return docs

    def _parse(self, source: str, href: str, docs: list[Document]) -> Design:
        key = (source, href)
        with self._lock:
            hit = self._parsed.get(key)
            if hit is not None and hit[0] is docs:
                return hit[1]
        design = parse_design(docs)
        with self._lock:  # one design per href: a fetched-again design replaces the old one
            self._parsed[key] = (docs, design)
        return design
