"""The configuration reference: each service's options, from the option definitions that
etc/<service>/config-generator.conf names (the same generator run that writes the
.conf.sample files, in its machine-readable format)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from oslo_config import generator

from tools.docs.openapi_md import text

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("shipyard", "promenade", "drydock")


def options(service: str) -> dict[str, Any]:
    """`oslo-config-generator --config-file etc/<service>/config-generator.conf --format json`,
    parsed: {group: {"help", "opts": [...]}} as the generator describes them."""
    conf = ROOT / "etc" / service / "config-generator.conf"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "options.json"
        generator.main(["--config-file", str(conf), "--format", "json",
                        "--output-file", str(out)])
        data: dict[str, Any] = json.loads(out.read_text())["options"]
    return data


def _default(opt: dict[str, Any]) -> str:
    value = opt["sample_default"] if opt.get("sample_default") is not None else opt["default"]
    if value is None or value == "":
        return ""
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    elif isinstance(value, bool):
        value = str(value).lower()
    return f"`{value}`"


def _notes(opt: dict[str, Any]) -> str:
    out = [text(opt.get("help") or "")]
    if opt.get("choices"):
        out.append("One of " + ", ".join(f"`{c[0]}`" for c in opt["choices"]) + ".")
    if opt.get("min") is not None:
        out.append(f"Minimum {opt['min']}.")
    if opt.get("max") is not None:
        out.append(f"Maximum {opt['max']}.")
    flags = [word for key, word in (("required", "required"), ("secret", "secret"),
                                    ("mutable", "mutable"), ("advanced", "advanced"))
             if opt.get(key)]
    if flags:
        out.append("*" + ", ".join(flags) + ".*")
    if opt.get("deprecated_for_removal"):
        why = text(opt.get("deprecated_reason") or "")
        out.append("**Deprecated for removal**" + (f": {why}" if why else "") + ".")
    old = [f"`[{d['group']}] {d['name']}`" for d in opt.get("deprecated_opts") or []]
    if old:
        out.append("Formerly " + ", ".join(old) + ".")
    return " ".join(p for p in out if p)


def _group(name: str, group: dict[str, Any]) -> str:
    rows = [f"| `{o['name']}` | {o['type'].removesuffix(' value')} | {_default(o)} | "
            f"{_notes(o)} |" for o in group["opts"]]
    namespaces = sorted({o["namespace"] for o in group["opts"]})
    head = f"### `[{name}]` {{#{name.lower()}}}\n\n"
    help_ = f"{text(group['help'])}\n\n" if group.get("help") else ""
    source = "Options from " + ", ".join(f"`{n}`" for n in namespaces) + ".\n\n"
    return (head + help_ + source + "| option | type | default | description |\n"
            "| --- | --- | --- | --- |\n" + "\n".join(rows))


def page(service: str) -> str:
    groups = {g: d for g, d in options(service).items() if d["opts"]}
    own = [g for g, d in groups.items() if any(o["namespace"] == service for o in d["opts"])]
    libs = [g for g in groups if g not in own]
    env = f"{service.upper()}_CONFIG_FILE"
    parts = [
        f"# {service.capitalize()} configuration",
        f"The options of `{service}.conf`, generated from the option definitions that "
        f"`etc/{service}/config-generator.conf` lists (namespaces "
        + ", ".join(f"`{n}`" for n in _namespaces(service)) + "), the same ones "
        f"`etc/{service}/{service}.conf.sample` is generated from (`tox -e genconfig`; a test "
        "keeps the sample current). The service reads the file named by `--config-file` or "
        f"`${env}`; an option left out takes the default shown.",
        "Groups: " + ", ".join(f"[`[{g}]`](#{g.lower()})" for g in own + libs) + ".",
        f"## {service.capitalize()}'s own options",
        *[_group(g, groups[g]) for g in own],
    ]
    if libs:
        parts += ["## Options of the libraries it uses",
                  "Authentication through Keystone (`[keystone_authtoken]`, used with "
                  "`[auth] strategy = keystone`) and the policy engine (`[oslo_policy]`).",
                  *[_group(g, groups[g]) for g in libs]]
    return "\n\n".join(parts) + "\n"


def _namespaces(service: str) -> list[str]:
    conf = ROOT / "etc" / service / "config-generator.conf"
    return [line.split("=", 1)[1].strip() for line in conf.read_text().splitlines()
            if line.strip().startswith("namespace")]


def pages() -> dict[str, str]:
    """reference/configuration/<service>.md for each service."""
    return {f"reference/configuration/{s}.md": page(s) for s in SERVICES}
