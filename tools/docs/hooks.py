"""MkDocs hooks (mkdocs.yml `hooks:`): the generated reference pages and diagrams, made at
every build from the code and the schemas so they cannot drift; nothing generated is written
into docs/."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.docs import cli_md, config_md, diagrams, openapi_md  # noqa: E402


def generated_pages() -> dict[str, str]:
    """Every generated page, by its path under docs/."""
    return {**openapi_md.pages(), **cli_md.pages(), **config_md.pages()}


def on_files(files: Files, config: Any) -> Files:
    for path, content in generated_pages().items():
        if files.get_file_from_path(path) is not None:
            raise ValueError(f"docs/{path} is generated at build time: remove the file")
        files.append(File.generated(config, path, content=content))
    return files


# The navigation is every page (mkdocs.yml has no `nav`); these only order it by audience and
# title the generated sections. Anything not named here keeps its place after them.
ORDER = {"": ["index.md", "architecture.md", "guide", "operations", "reference",
              "performance.md"],
         "reference": ["reference/index.md", "reference/http", "reference/cli",
                       "reference/configuration"],
         **{f"reference/{kind}": [f"reference/{kind}/{name}.md" for name in names]
            for kind, names in (("http", openapi_md.SERVICES),
                                ("configuration", config_md.SERVICES),
                                ("cli", [*cli_md.PAGES, "services"]))}}
TITLES = {"reference/http": "HTTP API", "reference/cli": "Command line",
          "reference/configuration": "Configuration"}


def _path(item: Any) -> str:
    """A page's source path, or a section's folder (its pages' common folder)."""
    if isinstance(item, Page):
        return item.file.src_uri
    if isinstance(item, Section):
        paths = [_path(child) for child in item.children]
        return str(Path(paths[0]).parent) if paths else ""
    return ""


def _arrange(items: list[Any], folder: str) -> list[Any]:
    wanted = ORDER.get(folder, [])
    for item in items:
        if isinstance(item, Section):
            path = _path(item)
            item.title = TITLES.get(path, item.title)
            item.children = _arrange(item.children, path)
    return sorted(items, key=lambda i: wanted.index(_path(i)) if _path(i) in wanted
                  else len(wanted))


def on_nav(nav: Navigation, config: Any, files: Files) -> Navigation:
    nav.items = _arrange(nav.items, "")
    return nav


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return diagrams.expand(markdown)
