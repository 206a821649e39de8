"""MAAS's machine listing decoded an item at a time as its bytes arrive
(drydock_api.drivers.maas.listing): the same items as decoding the whole text, however the
bytes are cut, and a text that is not one whole JSON array refused."""

from __future__ import annotations

import json

import pytest

from common.jsontypes import JSON
from drydock_api.drivers.maas import listing
from drydock_api.drivers.maas.listing import ArrayItems, NotWholeJson

ITEMS: list[JSON] = [
    {"hostname": "nœud-01", "tags": ["a]", "b,"], "nested": {"x": [1, {"y": None}]}},
    {"hostname": "n02", "power_state": "on", "memory": 4096, "cpu_speed": 2.5e3},
    [], "a string with \\\"quotes\\\" and ] , [", 12345, -0.5, True, None, {},
]


def decode(data: bytes, size: int) -> list[JSON]:
    items = ArrayItems()
    out: list[JSON] = []
    for i in range(0, len(data), size):
        out.extend(items.feed(data[i:i + size]))
    return out + items.close()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100_000])
def test_any_cut_of_the_bytes_gives_the_items_of_the_whole_text(size: int) -> None:
    for text in (json.dumps(ITEMS, ensure_ascii=False), json.dumps(ITEMS, indent=2),
                 " [ 1 , 23 , 4.5e3 ] \n"):
        assert decode(text.encode(), size) == json.loads(text)


@pytest.mark.parametrize("text", ["", "  \n", "[]", " [ ] "])
def test_an_empty_listing_has_no_items(text: str) -> None:
    assert decode(text.encode(), 1) == []


@pytest.mark.parametrize("text", ['[{"a": 1}, {"b"', '[{"a": 1}', "[1, 2", "[1,]", "[1 2]",
                                  "<html>", '{"a": 1}', "[1] [2]", "[1], x"])
def test_a_text_that_is_not_one_whole_array_is_refused(text: str) -> None:
    for size in (1, 1000):
        with pytest.raises(NotWholeJson):
            decode(text.encode(), size)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(NotWholeJson):
        decode(b'["\xff\xfe"]', 1000)


def test_an_unfinished_item_past_the_limit_is_refused_before_the_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "MAX_ITEM_CHARS", 100)
    items = ArrayItems()
    items.feed(b'[{"a": "' + b"x" * 50)
    with pytest.raises(NotWholeJson):
        items.feed(b"x" * 100)
