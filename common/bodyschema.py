"""Request bodies checked against their service's OpenAPI component schemas: one 400 listing
every problem, worded as the services word their own checks (the document is the contract)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache

import jsonschema
from jsonschema.exceptions import ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from common.errors import ValidationFailed
from common.openapidoc import openapi_document
from common.status import validation_message

TYPE_WORDS = {"boolean": "true or false", "object": "an object", "array": "a list",
              "string": "a string", "integer": "an integer", "number": "a number",
              "null": "null"}


def _json_schema(node: object) -> object:
    """OpenAPI 3.0's `nullable: true` said as JSON Schema says it: null beside the type (and
    among the enum's values), or an alternative where the schema names no type."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items()
           if not (k == "nullable" and isinstance(v, bool))}
    if node.get("nullable") is not True:
        return out
    if isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
        values = out.get("enum")
        if isinstance(values, list) and None not in values:
            out["enum"] = [*values, None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


@cache
def _validator(service: str, component: str) -> jsonschema.Draft202012Validator:
    uri = f"urn:berth:openapi:{service}"
    doc = _json_schema(openapi_document(service))
    registry: Registry[bool | Mapping[str, object]] = Registry().with_resource(
        uri, DRAFT202012.create_resource(doc))
    return jsonschema.Draft202012Validator({"$ref": f"{uri}#/components/schemas/{component}"},
                                           registry=registry)


def _where(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _choice(values: list[str]) -> str:
    if len(values) <= 2:
        return " or ".join(values)
    return f"one of {', '.join(values)}"


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _fitting_branch(err: ValidationError) -> list[ValidationError] | None:
    """The errors of the one alternative (anyOf/oneOf) whose type the value has, if one."""
    branches: dict[str | int, list[ValidationError]] = {}
    for sub in err.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [errs for errs in branches.values()
               if not any(e.validator == "type" and not e.relative_path for e in errs)]
    return fitting[0] if len(fitting) == 1 and fitting[0] else None


def _problems(err: ValidationError) -> Iterator[str]:
    value: object = err.validator_value
    listed = value if isinstance(value, list) else []  # required, enum and type lists
    where, rule = _where(err.absolute_path), err.validator
    subject = where or "body"
    if rule == "additionalProperties" and isinstance(err.instance, dict):
        known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        for key in err.instance:
            if key not in known:
                yield f"{where + ': ' if where else ''}unknown field {key!r}"
    elif rule == "required" and isinstance(err.instance, dict):
        yield from (f"{_join(where, n)} is required" for n in listed if n not in err.instance)
    elif rule == "enum":
        yield f"{subject} must be {_choice([str(v) for v in listed if v is not None])}"
    elif rule == "type":
        kinds = [value] if isinstance(value, str) else [str(k) for k in listed]
        yield f"{subject} must be {' or '.join(TYPE_WORDS.get(k, k) for k in kinds)}"
    elif rule in ("minimum", "maximum"):
        yield f"{subject} must be {'at least' if rule == 'minimum' else 'at most'} {value}"
    elif rule in ("minLength", "maxLength"):
        bound = "at least" if rule == "minLength" else "at most"
        yield f"{subject} must be {bound} {value} characters long"
    elif rule in ("minItems", "maxItems"):
        yield f"{subject} must hold {'at least' if rule == 'minItems' else 'at most'} " \
              f"{value} items"
    elif rule == "pattern":
        yield f"{subject} must match {value}"
    elif rule in ("anyOf", "oneOf"):
        branch = _fitting_branch(err)
        if branch is not None:
            for sub in branch:
                yield from _problems(sub)
        else:
            described = err.schema.get("description") if isinstance(err.schema, dict) else None
            yield f"{subject} must be {described or 'one of its documented forms'}"
    else:
        yield f"{subject}: {err.message}"


def schema_problems(service: str, component: str, body: object) -> list[str]:
    """Every way `body` breaks the component schema of the service's OpenAPI document."""
    errors = sorted(_validator(service, component).iter_errors(body),
                    key=lambda e: [str(p) for p in e.absolute_path])
    return list(dict.fromkeys(p for err in errors for p in _problems(err)))


def require_schema(service: str, component: str, body: object, title: str, *,
                   extra: Sequence[str] = (), reason: str | None = None) -> None:
    """400 listing every schema problem of `body`, and the `extra` problems of the caller's
    own checks, in one status body (reason ValidationFailure unless the service keeps
    another for the route); quiet when there is none."""
    problems = list(dict.fromkeys([*schema_problems(service, component, body), *extra]))
    if problems:
        raise ValidationFailed(title, messages=[validation_message(p, name=component)
                                                for p in problems], reason=reason)
