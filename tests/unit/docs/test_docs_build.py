"""The docs site builds in strict mode, and strict mode refuses a broken link, a missing anchor
and a page left out of the navigation; the generated pages cover what they are generated from."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MKDOCS = Path(sys.executable).parent / "mkdocs"
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = build(ROOT / "mkdocs.yml", out)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_site_builds_with_generated_reference(site):
    for page in ("index", "architecture", "reference/index", "reference/cli/shipyard",
                 "reference/cli/berth", "reference/cli/sitesim", "reference/cli/services",
                 *(f"reference/{kind}/{svc}" for kind in ("http", "configuration")
                   for svc in ("shipyard", "promenade", "drydock"))):
        assert (site / f"{page}.html").is_file(), page
    # nothing generated is kept in docs/: the hook makes it at every build
    assert sorted(p.name for p in (ROOT / "docs" / "reference").rglob("*.md")) == ["index.md"]


def test_architecture_draws_every_state_of_every_table(site):
    from drydock_api.db.states import TRANSITIONS as TASK
    from drydock_api.nodes.reboot import TRANSITIONS as REBOOT
    from shipyard_api.workflow.states import ACTION_TRANSITIONS, STEP_TRANSITIONS
    from sitesim.maas.statuses import Status

    html = (site / "architecture.html").read_text()
    assert html.count("stateDiagram-v2") == 5
    for table in (ACTION_TRANSITIONS, STEP_TRANSITIONS, TASK, REBOOT):
        for state in table:
            assert f'state "{state.value}" as' in html, state
    for status in Status:
        assert f'state "{status.label}" as' in html, status


def _minimal(tmp_path: Path, pages: dict[str, str], nav: str = "") -> Path:
    """A site of `pages` under this repository's mkdocs.yml settings, without the hooks."""
    docs = tmp_path / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text)
    config = (ROOT / "mkdocs.yml").read_text()
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("hooks:\n  - tools/docs/hooks.py\n", "")
    path = tmp_path / "mkdocs.yml"
    path.write_text(config + nav)
    return path


def test_strict_build_refuses_a_link_to_a_missing_page(tmp_path):
    config = _minimal(tmp_path, {"index.md": "# Home\n\nSee [the guide](guide/missing.md).\n"})
    result = build(config, tmp_path / "site")
    assert result.returncode != 0
    assert "guide/missing.md" in result.stderr


def test_strict_build_refuses_a_missing_anchor(tmp_path):
    config = _minimal(tmp_path, {"index.md": "# Home\n\nSee [there](other.md#nowhere).\n",
                                 "other.md": "# Other\n\n## Somewhere\n"})
    result = build(config, tmp_path / "site")
    assert result.returncode != 0
    assert "nowhere" in result.stderr


def test_strict_build_refuses_a_page_left_out_of_a_nav(tmp_path):
    config = _minimal(tmp_path, {"index.md": "# Home\n", "lost.md": "# Lost\n"},
                      nav="\nnav:\n  - index.md\n")
    result = build(config, tmp_path / "site")
    assert result.returncode != 0
    assert "lost.md" in result.stderr


def test_without_nav_every_page_is_in_the_navigation(tmp_path):
    config = _minimal(tmp_path, {"index.md": "# Home\n", "guide/index.md": "# Guide\n",
                                 "guide/new-howto.md": "# A new how-to\n"})
    result = build(config, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert "A new how-to" in (tmp_path / "site" / "index.html").read_text()
