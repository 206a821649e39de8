"""Discovery documents: /version, /api, /apis, /api/v1 and /apis/<group>/<version>."""

from __future__ import annotations

from typing import Any

from sitesim.kubeapi.resources import GROUP_VERSIONS, RESOURCES, SUBRESOURCES

Obj = dict[str, Any]


def version_info() -> Obj:
    """What `GET /version` answers (kubectl's dispatcher picks its minor version from it)."""
    return {
        "major": "1", "minor": "32", "emulationMajor": "1", "emulationMinor": "32",
        "gitVersion": "v1.32.4", "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335",
        "gitTreeState": "clean", "buildDate": "2025-04-22T16:03:15Z", "goVersion": "go1.23.6",
        "compiler": "gc", "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> Obj:
    """`GET /api`: the core group's versions."""
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(name: str, version: str) -> Obj:
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> Obj:
    """`GET /apis`: every named group."""
    groups = [_group(g, v) for g, v in GROUP_VERSIONS if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> Obj | None:
    """`GET /apis/<group>`."""
    for g, v in GROUP_VERSIONS:
        if g == name and g:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(g, v)}
    return None


def api_resource_list(group: str, version: str) -> Obj | None:
    """`GET /api/v1` or `/apis/<group>/<version>`: resources and subresources served there."""
    if (group, version) not in GROUP_VERSIONS:
        return None
    resources: list[Obj] = []
    for res in RESOURCES:
        if (res.group, res.version) != (group, version):
            continue
        entry: Obj = {"name": res.plural, "singularName": res.singular,
                      "namespaced": res.namespaced, "kind": res.kind, "verbs": list(res.verbs),
                      "storageVersionHash": res.kind.lower()[:11]}
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        resources.append(entry)
        for parent, sub, sub_group, sub_version, kind, verbs in SUBRESOURCES:
            if parent != res.plural:
                continue
            sub_entry: Obj = {"name": f"{parent}/{sub}", "singularName": "",
                              "namespaced": res.namespaced, "kind": kind, "verbs": list(verbs)}
            if (sub_group, sub_version) != (group, version):
                sub_entry["group"], sub_entry["version"] = sub_group, sub_version
            resources.append(sub_entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": resources}


def _openapi_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root() -> Obj:
    """`GET /openapi/v3`: where each group-version's OpenAPI document lives."""
    return {"paths": {
        _openapi_key(g, v): {"serverRelativeURL": f"/openapi/v3/{_openapi_key(g, v)}?hash=sitesim"}
        for g, v in GROUP_VERSIONS}}


def openapi_v3_group(group: str, version: str) -> Obj | None:
    """A minimal OpenAPI v3 document: PATCH operations that accept `fieldValidation`.

    kubectl looks for that parameter to decide that the server validates fields itself
    (instead of downloading the full schema); schemas are left empty on purpose.
    """
    if (group, version) not in GROUP_VERSIONS:
        return None
    prefix = f"/apis/{group}/{version}" if group else f"/{_openapi_key(group, version)}"
    param = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"},
             "description": "accepted and ignored by the simulated API"}
    paths: Obj = {}
    for res in RESOURCES:
        if (res.group, res.version) != (group, version):
            continue
        scope = f"{prefix}/namespaces/{{namespace}}/" if res.namespaced else f"{prefix}/"
        gvk = {"group": group, "version": version, "kind": res.kind}
        paths[f"{scope}{res.plural}/{{name}}"] = {
            op: {"x-kubernetes-group-version-kind": gvk, "parameters": [param],
                 "responses": {"200": {"description": "OK"}}}
            for op in ("get", "put", "patch", "delete")}
        paths[f"{scope}{res.plural}"] = {
            "post": {"x-kubernetes-group-version-kind": gvk, "parameters": [param],
                     "responses": {"201": {"description": "Created"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (sitesim)", "version": "v1.32.4"},
            "paths": paths, "components": {"schemas": {}}}
