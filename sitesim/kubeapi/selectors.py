"""Label selectors (query strings and LabelSelector objects) and field selectors."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sitesim.kubeapi.errors import KubeBadRequest

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*$")


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector."""

    key: str
    op: str  # in | notin | exists | !exists | gt | lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("gt", "lt") and present and value is not None:
            try:
                left, right = int(value), int(self.values[0])
            except ValueError:
                return False
            return left > right if self.op == "gt" else left < right
        return False


Selector = tuple[Requirement, ...]


def _split_clauses(text: str) -> list[str]:
    clauses, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            clauses.append(text[start:i])
            start = i + 1
    clauses.append(text[start:])
    return [c for c in clauses if c.strip()]


def _parse_clause(clause: str) -> Requirement:
    m = _SET_RE.match(clause)
    if m and not m.group(1):
        values = tuple(v.strip() for v in m.group(4).split(",") if v.strip())
        return Requirement(m.group(2), m.group(3), values)
    m = _EQ_RE.match(clause)
    if m:
        op = "notin" if m.group(2) == "!=" else "in"
        return Requirement(m.group(1), op, (m.group(3),))
    m = _EXISTS_RE.match(clause)
    if m:
        return Requirement(m.group(2), "!exists" if m.group(1) else "exists")
    raise KubeBadRequest(f"unable to parse requirement: {clause.strip()!r}")


def parse_label_selector(text: str | None) -> Selector:
    """Parse `a=b,c!=d,e in (f,g),!h` (an empty or missing text selects everything)."""
    if not text:
        return ()
    return tuple(_parse_clause(c) for c in _split_clauses(text))


def label_selector_from_object(selector: Mapping[str, Any] | None) -> Selector | None:
    """A metav1.LabelSelector as requirements; None (a missing selector) selects nothing."""
    if selector is None:
        return None
    reqs = [Requirement(k, "in", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise KubeBadRequest(f"invalid label selector operator {expr.get('operator')!r}")
        reqs.append(Requirement(str(expr.get("key")), op, tuple(expr.get("values") or ())))
    return tuple(reqs)


def matches(selector: Selector | None, labels: Mapping[str, str] | None) -> bool:
    """True when every requirement holds (a None selector matches nothing)."""
    if selector is None:
        return False
    return all(r.matches(labels or {}) for r in selector)


FieldGetter = Callable[[Mapping[str, Any]], str | None]

_FIELD_GETTERS: dict[str, dict[str, FieldGetter]] = {
    "pods": {
        "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName") or "",
        "status.phase": lambda o: (o.get("status") or {}).get("phase") or "",
        "spec.schedulerName": lambda o: (o.get("spec") or {}).get("schedulerName") or "",
        "spec.restartPolicy": lambda o: (o.get("spec") or {}).get("restartPolicy") or "",
        "status.podIP": lambda o: (o.get("status") or {}).get("podIP") or "",
    },
    "nodes": {
        "spec.unschedulable": lambda o: str(bool((o.get("spec") or {}).get("unschedulable")))
        .lower(),
    },
}


@dataclass(frozen=True)
class FieldRequirement:
    """One clause of a field selector: `field=value` or `field!=value`."""

    field: str
    value: str
    negate: bool

    def matches(self, obj: Mapping[str, Any], resource: str) -> bool:
        got = _field_value(obj, resource, self.field)
        return (got != self.value) if self.negate else (got == self.value)


def _field_value(obj: Mapping[str, Any], resource: str, field: str) -> str | None:
    meta = obj.get("metadata") or {}
    if field == "metadata.name":
        return str(meta.get("name") or "")
    if field == "metadata.namespace":
        return str(meta.get("namespace") or "")
    getter = _FIELD_GETTERS.get(resource, {}).get(field)
    return getter(obj) if getter else None


def parse_field_selector(text: str | None, resource: str) -> tuple[FieldRequirement, ...]:
    """Parse `spec.nodeName=node01,metadata.name!=x`; unsupported fields are a 400."""
    if not text:
        return ()
    reqs = []
    for clause in (c.strip() for c in text.split(",") if c.strip()):
        negate = "!=" in clause
        field, _, value = clause.partition("!=" if negate else "=")
        field = field.strip()
        value = value.lstrip("=").strip()
        known = field in ("metadata.name", "metadata.namespace") or field in _FIELD_GETTERS.get(
            resource, {})
        if not field or not known:
            raise KubeBadRequest(
                f'"{field}" is not a known field selector: only "metadata.name", '
                f'"metadata.namespace"{_extra_fields(resource)}')
        reqs.append(FieldRequirement(field, value, negate))
    return tuple(reqs)


def _extra_fields(resource: str) -> str:
    extra = sorted(_FIELD_GETTERS.get(resource, {}))
    return "".join(f', "{f}"' for f in extra)


def fields_match(reqs: tuple[FieldRequirement, ...], obj: Mapping[str, Any], resource: str) -> bool:
    """True when the object satisfies every field requirement."""
    return all(r.matches(obj, resource) for r in reqs)
