"""Pure rules: collection statuses between document sets and the buffer modes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.errors import Conflict
from shipyard_api.documents.diff import (
    BufferMode,
    CollectionStatus,
    check_buffer_mode,
    collection_statuses,
)

S = CollectionStatus
contents = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.dictionaries(st.tuples(st.just("x/Y/v1"), st.sampled_from(["n1", "n2"])),
                    st.sampled_from(["v1", "v2"]), min_size=1),
)
REVERSED = {S.CREATED: S.DELETED, S.DELETED: S.CREATED, S.MODIFIED: S.MODIFIED,
            S.UNMODIFIED: S.UNMODIFIED}


@given(contents, contents)
def test_swapping_the_versions_swaps_created_and_deleted(base: dict, new: dict) -> None:
    forward, backward = collection_statuses(base, new), collection_statuses(new, base)
    assert set(forward) == set(base) | set(new)
    assert {c: REVERSED[s] for c, s in forward.items()} == backward


@given(contents)
def test_a_version_compared_with_itself_is_unmodified(base: dict) -> None:
    assert set(collection_statuses(base, base).values()) <= {S.UNMODIFIED}


CHANGED = {"site": S.MODIFIED, "secrets": S.UNMODIFIED}


@pytest.mark.parametrize(("mode", "collection", "changes", "refused"), [
    (BufferMode.REJECT_ON_CONTENTS, "site", {}, None),
    (BufferMode.APPEND, "site", {}, None),
    (BufferMode.REPLACE, "site", {}, None),
    (BufferMode.REJECT_ON_CONTENTS, "other", {"secrets": S.UNMODIFIED}, None),
    (BufferMode.REJECT_ON_CONTENTS, "other", CHANGED, "BufferNotEmpty"),
    (BufferMode.APPEND, "site", CHANGED, "CollectionInBuffer"),
    (BufferMode.APPEND, "secrets", CHANGED, None),
    (BufferMode.APPEND, "other", CHANGED, None),
    (BufferMode.REPLACE, "site", CHANGED, None),
])
def test_buffer_modes(mode: BufferMode, collection: str, changes: dict,
                      refused: str | None) -> None:
    if refused is None:
        check_buffer_mode(mode, collection, changes)
        return
    with pytest.raises(Conflict) as err:
        check_buffer_mode(mode, collection, changes)
    assert err.value.instance_reason == refused
