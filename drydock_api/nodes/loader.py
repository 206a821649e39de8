"""Loads a task's design from its design reference (cached by href in the resolver)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from common.context import RequestContext
from common.designref import DesignResolver, href_of
from common.documents import Document
from drydock_api.nodes.design import Design, parse_design


class DesignLoader:
    """Documents come from the resolver's cache; the design parsed from a cached list of
    documents is kept beside it, so a 10,000-node design is parsed once per fetch, not once
    per request."""

    def __init__(self, resolver: DesignResolver, cache_size: int = 8) -> None:
        self._resolver = resolver
        self._cache_size = cache_size
        self._parsed: OrderedDict[str, tuple[list[Document], Design]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, ref: Any) -> str:
        """The href of `ref` when design references may point there (400 otherwise); nothing
        is read, so a task whose design is only read later is refused at creation too."""
        return self._resolver.check(ref)

    def documents(self, ref: Any, ctx: RequestContext | None = None) -> list[Document]:
        return self._resolver.resolve(ref, ctx)

    def design(self, ref: Any, ctx: RequestContext | None = None) -> Design:
        docs, href = self.documents(ref, ctx), href_of(ref)
        with self._lock:
            hit = self._parsed.get(href)
            if hit is not None and hit[0] is docs:
                self._parsed.move_to_end(href)
                return hit[1]
        design = parse_design(docs)
        with self._lock:  # one design per href: a fetched-again design replaces the old one
            self._parsed[href] = (docs, design)
            self._parsed.move_to_end(href)
            while len(self._parsed) > self._cache_size:
                self._parsed.popitem(last=False)
        return design
