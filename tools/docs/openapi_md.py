"""The HTTP API reference: one markdown page per service from schemas/openapi/<service>.yaml.

Per operation: method and path, summary and description, who may call it, parameters, request
body and responses; then every component schema as a table of its fields. Nothing is written
by hand, so the pages follow the documents the services publish at /api/v1.0/openapi.json.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "schemas" / "openapi"
SERVICES = ("shipyard", "promenade", "drydock")
METHODS = ("get", "put", "post", "patch", "delete")
Schema = dict[str, Any]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def text(value: Any) -> str:
    """`value` for a table cell: one line, pipes escaped, `<` and `>` shown as such outside
    code spans."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(value).split()))
    out = [p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;")
           for p in parts]
    return "".join(out).replace("|", "\\|")


class Document:
    """One OpenAPI document and the markdown of its page."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.doc: dict[str, Any] = yaml.safe_load((OPENAPI / f"{service}.yaml").read_text())
        self.components: dict[str, Any] = self.doc.get("components") or {}

    # -- references ---------------------------------------------------------------------------

    def resolve(self, node: Any) -> Any:
        """Follow a local `$ref` (#/components/...) to what it names."""
        while isinstance(node, dict) and "$ref" in node:
            ref = str(node["$ref"])
            if not ref.startswith("#/"):
                raise ValueError(f"{self.service}: only local references are rendered: {ref}")
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    @staticmethod
    def schema_link(ref: str) -> str:
        name = ref.rsplit("/", 1)[-1]
        return f"[{name}](#schema-{slug(name)})"

    def type_of(self, schema: Any) -> str:
        if not isinstance(schema, dict) or not schema:
            return "any"
        if "$ref" in schema:
            return self.schema_link(str(schema["$ref"]))
        for key in ("oneOf", "anyOf"):
            if key in schema:
                kinds = " or ".join(self.type_of(s) for s in schema[key])
                return kinds + (" or null" if schema.get("nullable") else "")
        if "allOf" in schema:
            return " and ".join(self.type_of(s) for s in schema["allOf"])
        kind = str(schema.get("type", "object" if "properties" in schema else "any"))
        if kind == "array":
            kind = f"array of {self.type_of(schema.get('items'))}"
        elif schema.get("format"):
            kind += f" ({schema['format']})"
        return kind + (" or null" if schema.get("nullable") else "")

    @staticmethod
    def notes(schema: Schema) -> str:
        """Description plus the constraints a caller must meet."""
        out = [text(schema["description"])] if schema.get("description") else []
        if "enum" in schema:
            out.append("One of " + ", ".join(f"`{v}`" for v in schema["enum"]) + ".")
        if "default" in schema:
            out.append(f"Default `{schema['default']}`.")
        for key, word in (("minimum", "minimum"), ("maximum", "maximum"),
                          ("minLength", "min length"), ("maxLength", "max length"),
                          ("minItems", "min items"), ("maxItems", "max items")):
            if key in schema:
                out.append(f"{word.capitalize()} {schema[key]}.")
        if "pattern" in schema:
            out.append(f"Pattern `{schema['pattern']}`.")
        if "example" in schema:
            out.append(f"Example `{schema['example']}`.")
        return " ".join(out)

    # -- schemas as field tables --------------------------------------------------------------

    def rows(self, schema: Any, prefix: str = "", depth: int = 0) -> list[str]:
        """One table row per field (dotted paths); named schemas are linked, not expanded."""
        if not isinstance(schema, dict) or "$ref" in schema or depth > 6:
            return []
        out: list[str] = []
        required = set(schema.get("required") or [])
        for name, prop in (schema.get("properties") or {}).items():
            path = f"{prefix}{name}"
            prop = prop if isinstance(prop, dict) else {}
            flag = "yes" if name in required else ""
            out.append(f"| `{path}` | {self.type_of(prop)} | {flag} | {self.notes(prop)} |")
            out += self.rows(prop, f"{path}.", depth + 1)
            items = prop.get("items")
            if prop.get("type") == "array" and isinstance(items, dict):
                out += self.rows(items, f"{path}[].", depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out.append(f"| `{prefix}*` | {self.type_of(extra)} |  | {self.notes(extra)} |")
            out += self.rows(extra, f"{prefix}*.", depth + 1)
        return out

    def schema_block(self, schema: Any) -> str:
        """A schema shown where it is used: its type, then its fields when it has any."""
        schema = schema if isinstance(schema, dict) else {}
        head = f"Type: {self.type_of(schema)}."
        notes = self.notes(schema) if "$ref" not in schema else ""
        rows = self.rows(schema)
        if "items" in schema and "$ref" not in schema:
            rows += self.rows(schema["items"], "[].")
        parts = [head + (f" {notes}" if notes else "")]
        if rows:
            parts.append("| field | type | required | notes |\n| --- | --- | --- | --- |\n"
                         + "\n".join(rows))
        return "\n\n".join(parts)

    # -- operations ---------------------------------------------------------------------------

    def operations(self) -> list[tuple[str, str, Schema]]:
        return [(method, path, op) for path, item in (self.doc.get("paths") or {}).items()
                for method, op in item.items() if method in METHODS]

    @staticmethod
    def anchor(method: str, path: str) -> str:
        return slug(f"{method} {path}")

    def who(self, op: Schema) -> str:
        security = op.get("security", self.doc.get("security"))
        if not security:
            return "No authentication (open)."
        schemes = self.components.get("securitySchemes") or {}
        names = [f"`{schemes.get(n, {}).get('name', n)}` header" for req in security
                 for n in req]
        return "Authenticated: " + ", ".join(names) + "."

    def parameters(self, path_item: Schema, op: Schema) -> str:
        params = [self.resolve(p) for p in
                  [*(path_item.get("parameters") or []), *(op.get("parameters") or [])]]
        if not params:
            return ""
        rows = [f"| `{p['name']}` | {p.get('in', '')} | {self.type_of(p.get('schema'))} | "
                f"{'yes' if p.get('required') else ''} | "
                f"{self.notes({**(p.get('schema') or {}), **{k: p[k] for k in ('description',) if k in p}})} |"  # noqa: E501
                for p in params]
        return ("**Parameters**\n\n| name | in | type | required | notes |\n"
                "| --- | --- | --- | --- | --- |\n" + "\n".join(rows))

    def body(self, op: Schema) -> str:
        body = self.resolve(op.get("requestBody"))
        if not body:
            return ""
        need = "required" if body.get("required") else "optional"
        out = [f"**Request body** ({need})" + (f": {text(body['description'])}"
                                               if body.get("description") else "")]
        for media, content in (body.get("content") or {}).items():
            out.append(f"`{media}`. " + self.schema_block((content or {}).get("schema")))
        return "\n\n".join(out)

    def responses(self, op: Schema) -> str:
        rows = []
        for code, raw in sorted((op.get("responses") or {}).items(), key=lambda kv: str(kv[0])):
            response = self.resolve(raw)
            bodies = []
            for media, content in (response.get("content") or {}).items():
                bodies.append(f"`{media}` {self.type_of((content or {}).get('schema'))}")
            headers = ", ".join(f"`{h}`" for h in response.get("headers") or {})
            rows.append(f"| {code} | {text(response.get('description', ''))} | "
                        f"{'; '.join(bodies)} | {headers} |")
        return ("**Responses**\n\n| code | meaning | body | headers |\n"
                "| --- | --- | --- | --- |\n" + "\n".join(rows))

    def operation(self, method: str, path: str, op: Schema) -> str:
        item = (self.doc.get("paths") or {})[path]
        parts = [f"## `{method.upper()} {path}` {{#{self.anchor(method, path)}}}"]
        if op.get("summary"):
            parts.append(f"**{text(op['summary'])}**")
        if op.get("description"):
            parts.append(" ".join(str(op["description"]).split()).replace("<", "&lt;"))
        parts.append(self.who(op))
        parts += [p for p in (self.parameters(item, op), self.body(op), self.responses(op)) if p]
        return "\n\n".join(parts)

    def page(self) -> str:
        info = self.doc.get("info") or {}
        ops = self.operations()
        index = ["| method | path | summary |", "| --- | --- | --- |"]
        index += [f"| {m.upper()} | [`{p}`](#{self.anchor(m, p)}) | {text(o.get('summary', ''))} |"
                  for m, p, o in ops]
        schemas = self.components.get("schemas") or {}
        parts = [
            f"# {info.get('title', self.service)}",
            f"{text(info.get('description', ''))}\n\nGenerated from "
            f"`schemas/openapi/{self.service}.yaml` (OpenAPI {self.doc.get('openapi')}, API "
            f"version {info.get('version')}); the service serves the same document at "
            "`GET /api/v1.0/openapi.json`. Every non-2xx response carries the "
            f"[status body](#schema-status) and an `X-Context-Marker` header.",
            f"**{len(ops)} operations**\n\n" + "\n".join(index),
            *[self.operation(m, p, o) for m, p, o in ops],
            "## Schemas",
        ]
        for name, schema in schemas.items():
            parts.append(f"### {name} {{#schema-{slug(name)}}}\n\n" + self.schema_block(schema))
        return "\n\n".join(parts) + "\n"


def pages() -> dict[str, str]:
    """reference/http/<service>.md for each service."""
    return {f"reference/http/{s}.md": Document(s).page() for s in SERVICES}
