"""Loads a task's design from its design reference (cached by href in the resolver)."""

from __future__ import annotations

from typing import Any

from common.context import RequestContext
from common.designref import DesignResolver
from common.documents import Document
from drydock_api.nodes.design import Design, parse_design


class DesignLoader:
    def __init__(self, resolver: DesignResolver) -> None:
        self._resolver = resolver

    def check(self, ref: Any) -> str:
        """The href of `ref` when design references may point there (400 otherwise); nothing
        is read, so a task whose design is only read later is refused at creation too."""
        return self._resolver.check(ref)

    def documents(self, ref: Any, ctx: RequestContext | None = None) -> list[Document]:
        return self._resolver.resolve(ref, ctx)

    def design(self, ref: Any, ctx: RequestContext | None = None) -> Design:
        return parse_design(self.documents(ref, ctx))
