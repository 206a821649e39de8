"""The generated pages cover what they are generated from, and the hand-drawn redeploy sequence
names every step the redeploy_server definition runs."""

import re
from pathlib import Path

import click
import pytest
import yaml

from tools.docs import cli_md, config_md, diagrams, openapi_md

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("service", openapi_md.SERVICES)
def test_http_page_has_every_operation_and_schema(service):
    doc = yaml.safe_load((ROOT / "schemas" / "openapi" / f"{service}.yaml").read_text())
    page = openapi_md.pages()[f"reference/http/{service}.md"]
    for path, item in doc["paths"].items():
        for method in item:
            if method in openapi_md.METHODS:
                assert f"## `{method.upper()} {path}`" in page, (method, path)
    for name in doc["components"]["schemas"]:
        assert f"### {name} {{#schema-{openapi_md.slug(name)}}}" in page


def test_cli_pages_have_every_command():
    pages = "\n".join(cli_md.pages().values())
    for name, target in cli_md.scripts().items():
        if isinstance(target, click.Command):
            for path, _, _ in cli_md._walk(target, name, None):
                assert f"`{path}`" in pages, path
        else:
            assert f"## `{name}`" in pages and f"usage: {name}" in pages, name


@pytest.mark.parametrize("service", config_md.SERVICES)
def test_configuration_page_has_every_option_of_the_sample(service):
    sample = (ROOT / "etc" / service / f"{service}.conf.sample").read_text()
    page = config_md.pages()[f"reference/configuration/{service}.md"]
    for group in re.findall(r"^\[(\w+)\]$", sample, re.M):
        options = re.findall(r"^#(\w+) = ", sample.split(f"[{group}]", 1)[1].split("\n[", 1)[0],
                             re.M)
        for option in options:
            assert f"| `{option}` |" in page, (group, option)
        if options:
            assert f"### `[{group}]`" in page


def test_redeploy_sequence_names_every_step_of_the_definition():
    from shipyard_api.catalog import definitions

    text = (ROOT / "docs" / "architecture.md").read_text()
    sequence = text.split("```mermaid\nsequenceDiagram", 1)[1].split("```", 1)[0]
    for step in definitions()["redeploy_server"].steps:
        assert step.name in sequence, step.name


def test_every_state_machine_lists_its_states_and_transitions():
    from shipyard_api.workflow.states import ACTION_TRANSITIONS

    for name in diagrams.MACHINES:
        machine = diagrams.MACHINES[name]()
        chart = diagrams.mermaid(machine)
        for state in machine.states:
            assert f'state "{state}" as' in chart
        for source, target, _ in machine.edges:
            assert re.search(rf"{diagrams._node_id(source)} --> {diagrams._node_id(target)}\b",
                             chart)
    chart = diagrams.mermaid(diagrams.shipyard_action())
    edges = sum(len(targets) for targets in ACTION_TRANSITIONS.values())
    assert chart.count(" --> s_") == edges + 1  # and [*] --> pending
    assert "s_paused --> s_running : unpause" in chart


def test_an_unknown_diagram_name_fails_the_build():
    with pytest.raises(KeyError):
        diagrams.expand("<!-- berth:diagram nonesuch -->\n")
