"""The three patch types of the Kubernetes API: JSON patch, merge patch, strategic merge."""

from __future__ import annotations

import copy
from typing import Any

from sitesim.kubeapi.errors import KubeBadRequest, KubeInvalid, KubeUnsupportedMediaType

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"

# List fields that strategic merge patch merges element-wise, by this key.
_MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "addresses": "type",
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "taints": "key",
    "imagePullSecrets": "name",
    "tolerations": "key",
    "containerStatuses": "name",
}
# Lists of scalars merged as sets.
_SET_LISTS = {"finalizers"}


def apply_patch(target: dict[str, Any], patch: Any, content_type: str) -> dict[str, Any]:
    """Return `target` with `patch` applied (the target itself is not modified)."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise KubeBadRequest("json patch must be a list of operations")
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise KubeBadRequest("merge patch body must be a JSON object")
    if kind == MERGE_PATCH:
        result = merge_patch(target, patch)
    elif kind == STRATEGIC_PATCH:
        result = strategic_merge_patch(target, patch, "")
    else:
        raise KubeUnsupportedMediaType(f"the media type {content_type!r} is not a patch type")
    if not isinstance(result, dict):
        raise KubeBadRequest("patch must leave an object")
    return result


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str) -> Any:
    """Kubernetes strategic merge: like merge patch, but known lists merge by key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in _MERGE_KEYS:
            result[key] = _merge_list(result.get(key), value, _MERGE_KEYS[key], key)
        elif isinstance(value, list) and key in _SET_LISTS:
            current = list(result.get(key) or [])
            result[key] = current + [v for v in value if v not in current]
        else:
            result[key] = strategic_merge_patch(result.get(key), value, key)
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/") and isinstance(value, list):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
    return result


def _merge_list(current: Any, patch: list[Any], merge_key: str, field: str) -> list[Any]:
    merged = [copy.deepcopy(i) for i in current] if isinstance(current, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise KubeInvalid(f"strategic merge patch: every item of {field} needs {merge_key}")
        index = next((i for i, m in enumerate(merged)
                      if isinstance(m, dict) and m.get(merge_key) == item[merge_key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append({k: v for k, v in copy.deepcopy(item).items() if not k.startswith("$")})
        else:
            merged[index] = strategic_merge_patch(merged[index], item, field)
    return merged


def json_patch(target: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc: Any = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise KubeBadRequest("each json patch operation needs 'op' and 'path'")
        doc = _apply_op(doc, op)
    if not isinstance(doc, dict):
        raise KubeBadRequest("json patch must leave an object")
    return dict(doc)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise KubeBadRequest(f"invalid json pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        node = _child(node, part, path)
    return node


def _child(node: Any, part: str, path: str) -> Any:
    if isinstance(node, dict) and part in node:
        return node[part]
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    raise KubeInvalid(f"json patch: path {path!r} does not exist")


def _get(doc: Any, path: str) -> Any:
    node = doc
    for part in _pointer(path):
        node = _child(node, part, path)
    return node


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise KubeInvalid("json patch: cannot remove the whole document")
    parent, last = _parent(doc, parts, path), parts[-1]
    value = _child(parent, last, path)
    if isinstance(parent, dict):
        del parent[last]
    else:
        parent.pop(int(last))
    return value


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise KubeInvalid(f"json patch: index {last!r} out of range in {path!r}")
    else:
        raise KubeInvalid(f"json patch: cannot add at {path!r}")
    return doc


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    name, path = op["op"], str(op["path"])
    if name in ("add", "replace", "test") and "value" not in op:
        raise KubeBadRequest(f"json patch {name} at {path!r} needs a value")
    if name == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name == "remove":
        _remove(doc, path)
        return doc
    if name == "replace":
        _get(doc, path)
        if not _pointer(path):
            return copy.deepcopy(op["value"])
        _remove(doc, path)
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name in ("move", "copy"):
        source = str(op.get("from", ""))
        value = _remove(doc, source) if name == "move" else copy.deepcopy(_get(doc, source))
        return _add(doc, path, value)
    if name == "test":
        if _get(doc, path) != op["value"]:
            raise KubeInvalid(f"json patch: test failed at {path!r}")
        return doc
    raise KubeBadRequest(f"json patch: unknown op {name!r}")
