"""The configdocs commands of the `shipyard` CLI against a real shipyard-api."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from shipyard_api.cli.main import cli
from tests.integration.shipyard_docs.conftest import Shipyard, start_shipyard
from tests.integration.shipyard_docs.peers import FakePeer
from tests.unit.shipyard_docs.support import deployment_configuration, dump, node, secret


@pytest.fixture
def sy(tmp_path: Path, peers: tuple[FakePeer, FakePeer]) -> Iterator[Shipyard]:
    proc, shipyard = start_shipyard(tmp_path, f"sqlite:///{tmp_path}/shipyard.db", peers)
    try:
        yield shipyard
    finally:
        proc.stop()


def run(sy: Shipyard, *args: str, who: str = "admin") -> Result:
    env = {"SHIPYARD_URL": sy.url, "SHIPYARD_TOKEN": sy.tokens[who]}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def write(path: Path, docs: list[dict]) -> str:
    path.write_text(dump(docs))
    return str(path)


def test_stage_commit_and_compare_with_the_cli(sy: Shipyard, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    write(site / "a.yaml", [deployment_configuration()])
    write(site / "b.yml", [node()])
    (site / "notes.txt").write_text("not documents")
    created = run(sy, "create", "configdocs", "site", "--directory", str(site))
    assert created.exit_code == 0, created.output
    assert "staged" in created.output
    secrets = write(tmp_path / "secrets.yaml", [secret(value="cli-secret")])
    refused = run(sy, "create", "configdocs", "secrets", "--filename", secrets)
    assert refused.exit_code == 1 and "BufferNotEmpty" in refused.output
    appended = run(sy, "create", "configdocs", "secrets", "--filename", secrets, "--append")
    assert appended.exit_code == 0, appended.output

    diff = run(sy, "-o", "json", "get", "configdocs")
    assert {r["collection_name"]: r["new_status"] for r in json.loads(diff.output)} == {
        "site": "created", "secrets": "created"}
    table = run(sy, "get", "configdocs", "--committed", "--buffer")
    assert "site" in table.output and "created" in table.output

    dry = run(sy, "commit", "configdocs", "--dryrun")
    assert dry.exit_code == 0 and "DRYRUN" in dry.output
    committed = run(sy, "commit", "configdocs")
    assert committed.exit_code == 0 and "Validations succeeded" in committed.output
    empty = run(sy, "commit", "configdocs")
    assert empty.exit_code == 1 and "EmptyBuffer" in empty.output

    shown = run(sy, "get", "configdocs", "secrets", "--committed", who="reader")
    assert shown.exit_code == 0 and "cli-secret" not in shown.output
    docs = list(yaml.safe_load_all(shown.output))
    assert docs[0]["schema"] == "deckhand/Passphrase/v1"
    clear = run(sy, "get", "configdocs", "secrets", "--committed", "--cleartext-secrets")
    assert "cli-secret" in clear.output
    rendered = run(sy, "get", "renderedconfigdocs", "--committed")
    assert len(list(yaml.safe_load_all(rendered.output))) == 3


def test_replace_versions_and_usage_errors(sy: Shipyard, tmp_path: Path) -> None:
    first = write(tmp_path / "one.yaml", [deployment_configuration(), node()])
    assert run(sy, "create", "configdocs", "site", "--filename", first).exit_code == 0
    assert run(sy, "commit", "configdocs").exit_code == 0
    changed = write(tmp_path / "two.yaml", [deployment_configuration(), node("node02")])
    assert run(sy, "create", "configdocs", "site", "--filename", changed).exit_code == 0
    again = run(sy, "create", "configdocs", "site", "--filename", first, "--append")
    assert again.exit_code == 1 and "CollectionInBuffer" in again.output
    replaced = run(sy, "create", "configdocs", "site", "--filename", changed, "--replace")
    assert replaced.exit_code == 0
    diff = run(sy, "-o", "yaml", "get", "configdocs", "--base-version", "committed",
               "--diff-version", "buffer")
    assert yaml.safe_load(diff.output)[0]["new_status"] == "modified"
    none = run(sy, "get", "configdocs", "site", "--successful-site-action")
    assert none.exit_code == 1 and "VersionNotFound" in none.output
    deleted = run(sy, "create", "configdocs", "site", "--empty-collection", "--replace")
    assert deleted.exit_code == 0 and "deleted" in deleted.output
    assert run(sy, "get", "configdocs", "--buffer").exit_code == 2
    assert run(sy, "create", "configdocs", "site").exit_code == 2
    assert run(sy, "get", "renderedconfigdocs", "--buffer", "--committed").exit_code == 2
    denied = run(sy, "commit", "configdocs", who="reader")
    assert denied.exit_code == 1 and "Forbidden" in denied.output
