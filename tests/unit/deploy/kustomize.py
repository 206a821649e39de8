"""A small kustomize in Python: builds Berth's overlays without the kustomize binary.

Only the features deploy/kubernetes uses are implemented, and any other kustomization key
raises, so this renderer never silently differs from kustomize: `resources` (files and
directories), `namespace`, `configMapGenerator` / `secretGenerator` (`files`, `literals`,
`options.disableNameSuffixHash`) with kustomize's name hash and the rewriting of references
to generated names, JSON 6902 `patches` selected by kind and name, `replicas`, and `images`
(`newName`, `newTag`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

KNOWN_KEYS = {"apiVersion", "kind", "namespace", "resources", "configMapGenerator",
              "secretGenerator", "patches", "replicas", "images"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume",
                  "StorageClass", "PriorityClass", "CustomResourceDefinition"}
POD_TEMPLATE_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"}


class UnsupportedFeature(Exception):
    """The kustomization uses something this renderer does not implement."""


def build(directory: Path) -> list[Obj]:
    """The objects `kustomize build directory` prints (in no particular order)."""
    return _build(directory)[0]


def _build(directory: Path) -> tuple[list[Obj], dict[tuple[str, str], str]]:
    """The objects, and the generated names by (kind, name given) of this tree."""
    kust_path = directory / "kustomization.yaml"
    kust: Obj = yaml.safe_load(kust_path.read_text()) or {}
    unknown = set(kust) - KNOWN_KEYS
    if unknown:
        raise UnsupportedFeature(f"{kust_path}: unsupported keys {sorted(unknown)}")
    objects: list[Obj] = []
    renames: dict[tuple[str, str], str] = {}
    for entry in kust.get("resources") or []:
        path = directory / entry
        if path.is_dir():
            sub_objects, sub_renames = _build(path)
            objects += sub_objects
            renames.update(sub_renames)
        else:
            objects += _load_documents(path)
    for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for spec in kust.get(key) or []:
            generated = _generate(directory, kind, spec)
            renames[(kind, spec["name"])] = generated["metadata"]["name"]
            objects.append(generated)
    for patch in kust.get("patches") or []:
        _apply_patch(objects, patch)
    for replica in kust.get("replicas") or []:
        _set_replicas(objects, replica)
    for image in kust.get("images") or []:
        _set_image(objects, image)
    if kust.get("namespace"):
        _set_namespace(objects, kust["namespace"])
    for obj in objects:
        _rename_references(obj, renames)
    return objects, renames


def _load_documents(path: Path) -> Iterator[Obj]:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            yield doc


# -- generators ------------------------------------------------------------------------------
def _generate(directory: Path, kind: str, spec: Obj) -> Obj:
    unknown = set(spec) - {"name", "files", "literals", "options"}
    if unknown or set(spec.get("options") or {}) - {"disableNameSuffixHash"}:
        raise UnsupportedFeature(f"{kind} generator {spec.get('name')}: {sorted(unknown)}")
    data: dict[str, str] = {}
    for entry in spec.get("files") or []:
        key, _, rel = entry.rpartition("=")
        path = directory / rel
        data[key or path.name] = path.read_text()
    for literal in spec.get("literals") or []:
        key, _, value = literal.partition("=")
        data[key] = value
    obj: Obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": spec["name"]}}
    if kind == "Secret":
        obj["type"] = "Opaque"
        obj["data"] = {k: _base64(v) for k, v in data.items()}
    else:
        obj["data"] = data
    if not (spec.get("options") or {}).get("disableNameSuffixHash"):
        obj["metadata"]["name"] = f"{spec['name']}-{name_hash(obj)}"
    return obj


def _base64(text: str) -> str:
    """Base64 as kustomize (kyaml) writes Secret data: 70-character lines from 70 on."""
    encoded = base64.b64encode(text.encode()).decode()
    if len(encoded) < 70:
        return encoded
    return "".join(f"{encoded[i:i + 70]}\n" for i in range(0, len(encoded), 70))


def name_hash(obj: Obj) -> str:
    """kustomize's suffix (api/hasher): sha256 of Go's JSON of kind, type, data.

    kustomize looks the name up with the single path element "metadata/name", which finds
    nothing, so the name it hashes is always the empty string.
    """
    encoded: Obj = {"kind": obj["kind"], "name": "", "data": obj.get("data") or {}}
    if obj["kind"] == "Secret":
        encoded["type"] = obj.get("type", "")
    text = json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


# -- transformers ----------------------------------------------------------------------------
def _apply_patch(objects: list[Obj], patch: Obj) -> None:
    target = patch.get("target") or {}
    if set(patch) != {"target", "patch"} or set(target) - {"kind", "name"}:
        raise UnsupportedFeature(f"patch form {sorted(patch)} / target {sorted(target)}")
    operations = yaml.safe_load(patch["patch"])
    if not isinstance(operations, list):
        raise UnsupportedFeature("only JSON 6902 patches (a list of operations)")
    matched = [o for o in objects
               if re.fullmatch(target.get("kind", ".*"), o["kind"])
               and re.fullmatch(target.get("name", ".*"), o["metadata"]["name"])]
    if not matched:
        raise ValueError(f"patch target {target} matches nothing")
    for obj in matched:
        for op in operations:
            _json_patch(obj, op)


def _json_patch(obj: Obj, op: Obj) -> None:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
    parent: Any = obj
    for token in tokens[:-1]:
        parent = parent[int(token)] if isinstance(parent, list) else parent[token]
    last = tokens[-1]
    if op["op"] in ("add", "replace"):
        value = json.loads(json.dumps(op["value"]))
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, value)
            else:
                parent[index] = value
        else:
            if op["op"] == "replace" and last not in parent:
                raise ValueError(f"replace of missing {op['path']}")
            parent[last] = value
    elif op["op"] == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    else:
        raise UnsupportedFeature(f"JSON patch op {op['op']}")


def _set_replicas(objects: list[Obj], replica: Obj) -> None:
    matched = [o for o in objects if o["metadata"]["name"] == replica["name"]
               and o["kind"] in ("Deployment", "StatefulSet", "ReplicaSet")]
    if not matched:
        raise ValueError(f"replicas: no workload named {replica['name']}")
    for obj in matched:
        obj["spec"]["replicas"] = int(replica["count"])


def _split_image(ref: str) -> tuple[str, str]:
    """(name, ":tag" or "") of an image reference without a digest."""
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    return (ref[:colon], ref[colon:]) if colon > slash else (ref, "")


def _set_image(objects: list[Obj], image: Obj) -> None:
    unknown = set(image) - {"name", "newName", "newTag"}
    if unknown:
        raise UnsupportedFeature(f"images: unsupported keys {sorted(unknown)}")
    for obj in objects:
        if obj["kind"] not in POD_TEMPLATE_KINDS:
            continue
        spec = obj["spec"]["template"]["spec"]
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            name, tag = _split_image(container["image"])
            if name == image["name"]:
                tag = f":{image['newTag']}" if "newTag" in image else tag
                container["image"] = f"{image.get('newName', name)}{tag}"


def _set_namespace(objects: list[Obj], namespace: str) -> None:
    accounts = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    for obj in objects:
        if obj["kind"] == "Namespace":
            obj["metadata"]["name"] = namespace
        elif obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"]["namespace"] = namespace
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj.get("subjects") or []:
                if (subject.get("kind") == "ServiceAccount" and subject["name"] in accounts
                        and subject.get("namespace") in (None, "", "default")):
                    subject["namespace"] = namespace


def _rename_references(obj: Obj, renames: dict[tuple[str, str], str]) -> None:
    """Point pod templates at generated ConfigMap/Secret names (kustomize's nameReference)."""
    if obj["kind"] not in POD_TEMPLATE_KINDS or not renames:
        return
    pod = obj["spec"]["template"]["spec"]

    def fix(ref: Obj | None, kind: str, field: str = "name") -> None:
        if ref and (kind, ref.get(field)) in renames:
            ref[field] = renames[(kind, ref[field])]

    for volume in pod.get("volumes") or []:
        fix(volume.get("configMap"), "ConfigMap")
        fix(volume.get("secret"), "Secret", "secretName")
        for source in (volume.get("projected") or {}).get("sources") or []:
            fix(source.get("configMap"), "ConfigMap")
            fix(source.get("secret"), "Secret")
    for container in (pod.get("initContainers") or []) + pod["containers"]:
        for env in container.get("env") or []:
            value_from = env.get("valueFrom") or {}
            fix(value_from.get("configMapKeyRef"), "ConfigMap")
            fix(value_from.get("secretKeyRef"), "Secret")
        for source in container.get("envFrom") or []:
            fix(source.get("configMapRef"), "ConfigMap")
            fix(source.get("secretRef"), "Secret")
    for secret in pod.get("imagePullSecrets") or []:
        fix(secret, "Secret")
