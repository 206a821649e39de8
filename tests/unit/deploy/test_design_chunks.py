"""berth up stages a large design in pieces Shipyard accepts, cut between documents."""

from __future__ import annotations

import yaml

from berth_launcher.up import design_chunks
from sitesim.generate import generate_site


def test_a_large_design_is_cut_between_documents_into_pieces_under_the_limit() -> None:
    docs = [{"schema": "x/Y/v1", "data": {"n": i, "pad": "p" * 100, "l": [1, 2]}}
            for i in range(200)]
    text = yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)
    chunks = design_chunks(text, 2000)
    assert len(chunks) > 5
    assert all(len(c) <= 2000 for c in chunks)
    assert [d for c in chunks for d in yaml.safe_load_all(c)] == docs


def test_a_small_design_stays_one_piece() -> None:
    text = yaml.safe_dump_all([{"a": 1}, {"b": 2}], explicit_start=True)
    assert design_chunks(text) == [text]


def test_generate_site_makes_unique_names_for_large_sites() -> None:
    names = [n["name"] for n in generate_site(10_000, 100, 3)["nodes"]]
    assert len(set(names)) == 10_000 and names[0] == "node00001"
