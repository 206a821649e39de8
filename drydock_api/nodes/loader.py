"""Loads a task's design from its design reference (cached by href in the resolver); the API
keeps the design of each task it admits, and workers read that kept design."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from common.context import RequestContext
from common.designref import DesignResolver, href_of
from common.documents import Document
from drydock_api.db.designs import DesignStore
from drydock_api.nodes.design import Design, parse_design

LOG = logging.getLogger(__name__)


class DesignLoader:
    """Documents come from the resolver's cache; the design parsed from a cached list of
    documents is kept beside it, so a 10,000-node design is parsed once per fetch, not once
    per request. With a `kept` store, `admit` (task creation) stores what it resolved and
    `kept_documents`/`kept_design` (workers) read only that."""

    def __init__(self, resolver: DesignResolver, cache_size: int = 8,
                 kept: DesignStore | None = None) -> None:
        self._resolver = resolver
        self._cache_size = cache_size
        self._kept = kept
        self._parsed: OrderedDict[tuple[str, str], tuple[list[Document], Design]] = \
            OrderedDict()
        self._admitted: dict[str, list[Document]] = {}  # href -> the documents last kept
        self._read: OrderedDict[str, tuple[str, list[Document]]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, ref: Any) -> str:
        """The href of `ref` when design references may point there (400 otherwise); nothing
        is read, so a task whose design is only read later is refused at creation too."""
        return self._resolver.check(ref)

    def documents(self, ref: Any, ctx: RequestContext | None = None) -> list[Document]:
        return self._resolver.resolve(ref, ctx)

    def design(self, ref: Any, ctx: RequestContext | None = None) -> Design:
        return self._parse("fetched", href_of(ref), self.documents(ref, ctx))

    def admit(self, ref: Any, ctx: RequestContext | None = None) -> Design:
        """At task creation: the design resolved once and kept for the task's workers (the
        same documents, still in the resolver's cache, are not stored again)."""
        docs, href = self.documents(ref, ctx), href_of(ref)
        if self._kept is not None:
            with self._lock:
                known = self._admitted.get(href) is docs
            if not known:
                self._kept.keep(href, docs)
                with self._lock:
                    self._admitted[href] = docs
                    while len(self._admitted) > self._cache_size:
                        self._admitted.pop(next(iter(self._admitted)))
        return self._parse("fetched", href, docs)

    def kept_documents(self, ref: Any, ctx: RequestContext | None = None) -> list[Document]:
        """The documents kept when the task was admitted (one small query tells whether this
        process already holds them); never fetched, except for a task admitted before
        designs were kept (an older Drydock), whose design is fetched and kept now."""
        if self._kept is None:
            return self.documents(ref, ctx)
        href = href_of(ref)
        digest = self._kept.digest(href)
        with self._lock:
            hit = self._read.get(href)
        if hit is not None and hit[0] == digest:
            return hit[1]
        found = self._kept.documents(href) if digest is not None else None
        if found is None:
            LOG.info("No design kept for %s (a task admitted before designs were kept): "
                     "fetching it once", href)
            docs = self.documents(ref, ctx)
            found = (self._kept.keep(href, docs), docs)
        with self._lock:
            self._read[href] = found
            self._read.move_to_end(href)
            while len(self._read) > self._cache_size:
                self._read.popitem(last=False)
        return found[1]

    def kept_design(self, ref: Any, ctx: RequestContext | None = None) -> Design:
        return self._parse("kept", href_of(ref), self.kept_documents(ref, ctx))

    def _parse(self, source: str, href: str, docs: list[Document]) -> Design:
        key = (source, href)
        with self._lock:
            hit = self._parsed.get(key)
            if hit is not None and hit[0] is docs:
                self._parsed.move_to_end(key)
                return hit[1]
        design = parse_design(docs)
        with self._lock:  # one design per href: a fetched-again design replaces the old one
            self._parsed[key] = (docs, design)
            self._parsed.move_to_end(key)
            while len(self._parsed) > self._cache_size:
                self._parsed.popitem(last=False)
        return design
