"""`shipyard create|commit|get configdocs` and `get renderedconfigdocs`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click
import yaml

from common.jsontypes import JSONObject, as_list, as_object

if TYPE_CHECKING:
    from shipyard_api.cli.session import Shipyard

YAML_TYPE = "application/x-yaml"
# older → newer: with two version flags the older one is the base of the comparison
VERSION_FLAGS = ("successful_site_action", "last_site_action", "committed", "buffer")
VERSION_CHOICE = click.Choice(["buffer", "committed", "last-site-action",
                               "successful-site-action"])
F = TypeVar("F", bound=Callable[..., object])  # a click command function
DIFF_COLUMNS = [("Collection", "collection_name"), ("Base", "base"), ("New", "new"),
                ("Status", "new_status")]


def version_flags(func: F) -> F:
    """--committed --buffer --last-site-action --successful-site-action."""
    for flag in reversed(VERSION_FLAGS):
        func = click.option(f"--{flag.replace('_', '-')}", flag, is_flag=True,
                            help=f"The {flag.replace('_', ' ')} version.")(func)
    return func


def chosen(flags: dict[str, bool]) -> list[str]:
    return [v for v in VERSION_FLAGS if flags.get(v)]


def read_documents(filenames: tuple[str, ...], directories: tuple[str, ...],
                   recurse: bool) -> str:
    """The files (and *.yaml/*.yml files of the directories) as one multi-document YAML."""
    paths = [Path(f) for f in filenames]
    for directory in directories:
        pattern = "**/*" if recurse else "*"
        paths += sorted(p for p in Path(directory).glob(pattern)
                        if p.is_file() and p.suffix in (".yaml", ".yml"))
    if not paths:
        raise click.UsageError("Give --filename or --directory (holding *.yaml files)")
    parts = []
    for path in paths:
        text = path.read_text()
        try:
            list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise click.ClickException(f"{path} is not valid YAML: {exc}") from exc
        parts.append(text if text.lstrip().startswith("---") else f"---\n{text}")
    return "\n".join(p.rstrip("\n") for p in parts) + "\n"


def print_status(sy: Shipyard, body: JSONObject) -> None:
    if sy.output != "table":
        sy.emit(body)
        return
    click.echo(body.get("message", ""))
    for m in map(as_object, as_list(as_object(body.get("details")).get("messageList"))):
        mark = "ERROR" if m.get("error") else "info"
        click.echo(f"- [{mark}] {m.get('message')}")


def print_documents(sy: Shipyard, path: str, params: dict[str, str]) -> None:
    if sy.output == "json":
        sy.emit(sy.request("GET", path, params=params))
        return
    text = sy.request("GET", path, params=params, headers={"Accept": YAML_TYPE})
    click.echo((text or "").rstrip("\n"))


def register(create: click.Group, get: click.Group, commit: click.Group) -> None:
    """Attach the configdocs commands to the CLI's create, get and commit groups."""
    create.add_command(create_configdocs)
    commit.add_command(commit_configdocs)
    get.add_command(get_configdocs)
    get.add_command(get_renderedconfigdocs)


@click.command("configdocs")
@click.argument("collection")
@click.option("--filename", "filenames", multiple=True, type=click.Path(exists=True,
              dir_okay=False), help="A YAML file of documents (repeatable).")
@click.option("--directory", "directories", multiple=True, type=click.Path(
              exists=True, file_okay=False), help="A directory of *.yaml files (repeatable).")
@click.option("--recurse", is_flag=True, help="Also read the directories' subdirectories.")
@click.option("--append", "mode", flag_value="append", help="Add to a non-empty buffer.")
@click.option("--replace", "mode", flag_value="replace", help="Discard the buffer first.")
@click.option("--empty-collection", is_flag=True, help="Delete the collection in the buffer.")
@click.pass_obj
def create_configdocs(sy: Shipyard, collection: str, filenames: tuple[str, ...],
                      directories: tuple[str, ...], recurse: bool, mode: str | None,
                      empty_collection: bool) -> None:
    """Stage COLLECTION's documents in Shipyard's buffer."""
    params: dict[str, str] = {"buffermode": mode} if mode else {}
    if empty_collection:
        if filenames or directories:
            raise click.UsageError("--empty-collection takes no --filename or --directory")
        params["empty-collection"] = "true"
        body = ""
    else:
        body = read_documents(filenames, directories, recurse)
    print_status(sy, sy.request("POST", f"/configdocs/{collection}", params=params,
                                data=body.encode(), headers={"Content-Type": YAML_TYPE}))


@click.command("configdocs")
@click.option("--force", is_flag=True, help="Commit even when validations fail.")
@click.option("--dryrun", is_flag=True, help="Validate only; commit nothing.")
@click.pass_obj
def commit_configdocs(sy: Shipyard, force: bool, dryrun: bool) -> None:
    """Validate the buffer and commit it."""
    params = {"force": str(force).lower(), "dryrun": str(dryrun).lower()}
    print_status(sy, sy.request("POST", "/commitconfigdocs", params=params))


@click.command("configdocs")
@click.argument("collection", required=False)
@version_flags
@click.option("--base-version", type=VERSION_CHOICE, default=None,
              help="Base of the comparison (default committed).")
@click.option("--diff-version", type=VERSION_CHOICE, default=None,
              help="Version compared with the base (default buffer).")
@click.option("--cleartext-secrets", is_flag=True, help="Show secrets (needs the rule).")
@click.pass_obj
def get_configdocs(sy: Shipyard, /, collection: str | None, base_version: str | None,
                   diff_version: str | None, cleartext_secrets: bool, **flags: bool) -> None:
    """Show COLLECTION at a version, or compare every collection between two versions."""
    versions = chosen(flags)
    if collection:
        if len(versions) > 1 or base_version or diff_version:
            raise click.UsageError("With a collection give at most one version flag")
        params = {"version": versions[0] if versions else "buffer"}
        if cleartext_secrets:
            params["cleartext-secrets"] = "true"
        print_documents(sy, f"/configdocs/{collection}", params)
        return
    if versions and (base_version or diff_version):
        raise click.UsageError("Use version flags or --base-version/--diff-version, not both")
    if len(versions) not in (0, 2):
        raise click.UsageError("Give two version flags to compare (or a collection name)")
    base, new = versions if versions else (base_version or "committed",
                                           diff_version or "buffer")
    rows = sy.request("GET", "/configdocs", params={"versions": [base, new]})
    for row in rows:
        row["base"] = f"{row['base_version']} ({row['base_revision']})"
        row["new"] = f"{row['new_version']} ({row['new_revision']})"
    sy.emit(rows, DIFF_COLUMNS, title="Collections")


@click.command("renderedconfigdocs")
@version_flags
@click.option("--cleartext-secrets", is_flag=True, help="Show secrets (needs the rule).")
@click.pass_obj
def get_renderedconfigdocs(sy: Shipyard, /, cleartext_secrets: bool, **flags: bool) -> None:
    """Show the rendered documents of a version (default buffer)."""
    versions = chosen(flags)
    if len(versions) > 1:
        raise click.UsageError("Give at most one version flag")
    params = {"version": versions[0] if versions else "buffer"}
    if cleartext_secrets:
        params["cleartext-secrets"] = "true"
    print_documents(sy, "/renderedconfigdocs", params)
