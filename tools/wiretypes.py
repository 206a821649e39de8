"""Generate each service's wire TypedDicts from its OpenAPI document (`make wiretypes`).

    .venv/bin/python tools/wiretypes.py              # rewrites common/clients/generated/
    .venv/bin/python tools/wiretypes.py --out DIR    # writes there instead (the currency test)

The documents in schemas/openapi/ are the one source of the wire contract: the modules written
here are never edited by hand; tests/unit/common/test_wire_types_current.py fails when the
committed ones differ from what this writes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "schemas" / "openapi"
OUT = ROOT / "common" / "clients" / "generated"
SERVICES = ("drydock", "promenade", "shipyard")
# datamodel-code-generator's options: TypedDicts (PEP 655 NotRequired), `nullable` kept as
# `| None`, titles as class names, no timestamp and its own formatter (so the output depends
# on the pinned generator alone).
OPTIONS = ("--input-file-type", "openapi", "--output-model-type", "typing.TypedDict",
           "--target-python-version", "3.11", "--strict-nullable",
           "--no-use-closed-typed-dict", "--use-title-as-name", "--use-type-alias",
           "--enum-field-as-literal", "all",
           "--disable-timestamp", "--formatters", "builtin",
           # each document's JSONValue component (a value of any shape) is the project's JSON
           # alias, so a free-form object (additionalProperties: JSONValue) is a JSONObject
           "--type-overrides", '{"JSONValue": "common.jsontypes.JSON"}')


def header(service: str) -> str:
    return (f'"""{service.capitalize()}\'s wire types, generated from '
            f'schemas/openapi/{service}.yaml: do not edit.\n\n'
            f"Regenerate with `make wiretypes` (python tools/wiretypes.py).\n\"\"\"\n")


def command(service: str, out: Path) -> list[str]:
    exe = shutil.which("datamodel-codegen", path=str(Path(sys.executable).parent)) \
        or "datamodel-codegen"
    return [exe, "--input", str(DOCS / f"{service}.yaml"), "--output",
            str(out / f"{service}.py"), "--custom-file-header", header(service), *OPTIONS]


def generate(out: Path) -> list[Path]:
    """Write one module per service (and the package's __init__) into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "__init__.py").write_text(
        '"""Wire types generated from the OpenAPI documents (tools/wiretypes.py)."""\n')
    for service in SERVICES:
        subprocess.run(command(service, out), check=True, cwd=ROOT)
    return sorted(out.glob("*.py"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    for path in generate(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
