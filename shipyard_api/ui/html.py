"""A tiny escaping HTML builder: every string is escaped unless it is already `Html`.

Pages are built from `tag(...)` calls, so text from the site (node names, reasons, messages)
can never become markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


class Html(str):
    """Markup that is safe to emit as is (built here, never from outside text)."""

    __slots__ = ()


Child = object  # Html, text (escaped), numbers, None (nothing), or an iterable of those


def esc(value: object) -> Html:
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(children: Iterable[Child]) -> Html:
    return Html("".join(render(c) for c in children))


def render(child: Child) -> Html:
    if child is None or child is False:
        return Html("")
    if isinstance(child, (str, int, float)):
        return esc(child)
    if isinstance(child, Iterable):
        return join(child)
    return esc(child)


VOID = {"meta", "input", "br", "link"}


def tag(element: str, /, *children: Child, **attrs: object) -> Html:
    """<name attrs>children</name>; attribute names end in `_` to dodge keywords
    (`class_`), `_` inside becomes `-`; True is a bare attribute, None/False omitted."""
    parts = [element]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        parts.append(attr if value is True else f'{attr}="{esc(value)}"')
    head = "<" + " ".join(parts) + ">"
    if element in VOID:
        return Html(head)
    return Html(head + render(children) + f"</{element}>")


def svg(element: str, /, *children: Child, **attrs: object) -> Html:
    """An SVG element (self-closing when empty)."""
    out = tag(element, *children, **attrs)
    return out if children else Html(out.replace(f"></{element}>", "/>"))
