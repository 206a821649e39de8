"""The token file of the token strategy: a mapping of tokens, an empty file none, anything else
refused when the service starts (not taken for an empty file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.auth import TokenAuthenticator


def test_a_token_file_maps_tokens_and_an_empty_one_has_none(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("t1: {user: alice, roles: [admin]}\n")
    found = TokenAuthenticator.from_file(str(tokens)).authenticate({"X-Auth-Token": "t1"})
    assert found is not None and found.user == "alice" and list(found.roles) == ["admin"]
    tokens.write_text("")
    assert TokenAuthenticator.from_file(str(tokens)).authenticate({"X-Auth-Token": "t1"}) is None


def test_a_token_file_that_is_no_mapping_is_refused(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("- t1\n- t2\n")
    with pytest.raises(ValueError, match="maps each token"):
        TokenAuthenticator.from_file(str(tokens))
