"""The items of a JSON array decoded one at a time as its bytes arrive (MAAS's machine
listing: ~7 KB a machine, 74 MB at 10,000). Each item is decoded whole by the standard
library's C decoder, so the interpreter is never held for longer than one item, and no
copy of the whole listing is kept."""

from __future__ import annotations

import codecs
import json
import re

from common.jsontypes import JSON

MAX_ITEM_CHARS = 1024 * 1024  # an unfinished item longer than this is refused (a machine: ~7 KB)
SPACE = re.compile(r"[ \t\n\r]*")
DELIMITERS = frozenset(" \t\n\r,]")  # what may follow an array's item


class NotWholeJson(ValueError):
    """The text is not one whole JSON array."""


class ArrayItems:
    """Feed the array's bytes with `feed`, then `close`: each returns the items completed."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._json = json.JSONDecoder()
        self._text = ""
        self._state = "start"  # start, first (an item or "]"), item, next ("," or "]"), end

    def feed(self, chunk: bytes) -> list[JSON]:
        return self._decode(chunk, final=False)

    def close(self) -> list[JSON]:
        """The last items; NotWholeJson unless the array ended (an empty text is [])."""
        items = self._decode(b"", final=True)
        if self._state not in ("start", "end") or self._text.strip():
            raise NotWholeJson(f"the listing ends inside the array (in state {self._state})")
        return items

    def _decode(self, chunk: bytes, *, final: bool) -> list[JSON]:
        try:
            text = self._utf8.decode(chunk, final=final)
        except UnicodeDecodeError as exc:
            raise NotWholeJson(f"not UTF-8: {exc}") from exc
        return self._items(text, final)

    def _items(self, text: str, final: bool) -> list[JSON]:
        buf, pos, items = self._text + text, 0, []
        while True:
            pos = SPACE.match(buf, pos).end()  # type: ignore[union-attr]
            if pos == len(buf):
                break
            char = buf[pos]
            if self._state == "start":
                if char != "[":
                    raise NotWholeJson(f"not a JSON array: it starts {buf[pos:pos + 20]!r}")
                self._state, pos = "first", pos + 1
            elif self._state in ("first", "next") and char == "]":
                self._state, pos = "end", pos + 1
            elif self._state == "next":
                if char != ",":
                    raise NotWholeJson(f"expected ',' or ']' at {buf[pos:pos + 20]!r}")
                self._state, pos = "item", pos + 1
            elif self._state in ("first", "item"):
                try:
                    item, end = self._json.raw_decode(buf, pos)
                except json.JSONDecodeError as exc:
                    if final or len(buf) - pos > MAX_ITEM_CHARS:
                        raise NotWholeJson(str(exc)) from exc
                    break  # the item's end has not arrived yet
                if not final and not isinstance(item, dict | list | str) \
                        and (end == len(buf) or buf[end] not in DELIMITERS):
                    break  # a number the next bytes may go on ("1" of "12", "1" of "1.5")
                items.append(item)
                self._state, pos = "next", end
            else:
                raise NotWholeJson(f"text after the array: {buf[pos:pos + 20]!r}")
        self._text = buf[pos:]
        return items
