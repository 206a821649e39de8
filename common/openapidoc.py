"""The services' OpenAPI documents, read and parsed once per process: the app serves its
document, and request bodies are checked against its components (common/bodyschema.py).
Parsing a document is most of what building an app costs, so it is done once, with libyaml's
parser where PyYAML has it."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from common.jsontypes import JSONObject

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def openapi_document(service: str) -> JSONObject:
    """schemas/openapi/<service>.yaml, parsed. Shared by every caller: read, never change."""
    text = resources.files("schemas").joinpath("openapi", f"{service}.yaml").read_text()
    doc: JSONObject = yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
    return doc
