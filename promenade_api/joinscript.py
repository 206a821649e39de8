"""Join scripts (GET /join-scripts): what a freshly deployed host runs to join Kubernetes.

Airship's Promenade answers a shell script built for one node from the design and the query
(hostname, ip, labels); Drydock's promjoin boot action places it on the host, whose first boot
runs it. Berth's script is a real shell script whose steps are one command per line after the
`STEPS_MARKER` line, ending with `join_done`:

    join_register_node <hostname> <ip> <domain> <external_ip>
    join_label static|dynamic <key>=<value>     (once per label)
    join_start_kubelet
    join_done

A host that reads the steps (sitesim's simulated host does) can tell a complete script from
a truncated or altered one: anything else after the marker, or no `join_done`, is broken.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from common.documents import Document
from promenade_api.kube.labels import label_problems

CONTENT_TYPE = "text/x-shellscript"
NODE_SCHEMA = "drydock/BaremetalNode/v1"
STEPS_MARKER = "# --- join steps (one per line; the host reads them) ---"
# Airship's code reads labels.dynamic / labels.static; its API document names them
# dynamic.labels / static.labels: both spellings are accepted.
LABEL_PARAMS = {"labels.dynamic": "dynamic", "dynamic.labels": "dynamic",
                "labels.static": "static", "static.labels": "static"}
PARAMS = ("design_ref", "hostname", "ip", "external_ip", "domain", "leave_kubectl",
          *LABEL_PARAMS)
_HOST = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class JoinRequest:
    """One node's join script request, checked."""

    design_ref: str
    hostname: str
    ip: str
    external_ip: str = "127.0.0.1"
    domain: str = "local"
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # static|dynamic → labels


def _values(raw: object) -> list[str]:
    """A query parameter's values: repeated, and each comma-separated (as falcon's lists)."""
    items = raw if isinstance(raw, list) else [raw]
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


def _single(params: Mapping[str, object], name: str, problems: list[str]) -> str | None:
    raw = params.get(name)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, list):
        problems.append(f"{name} is given more than once")
        return None
    return str(raw).strip()


def _ip_problem(name: str, value: str) -> str | None:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return f"{name} {value!r} is not an IP address"
    return None


def _labels(params: Mapping[str, object], problems: list[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {"static": {}, "dynamic": {}}
    for name, kind in LABEL_PARAMS.items():
        if name not in params:
            continue
        for item in _values(params[name]):
            key, sep, value = item.partition("=")
            if not sep or not key:
                problems.append(f"{name}: {item!r} is not key=value")
                continue
            found = label_problems({key: value})
            if found:
                problems += [f"{name}: {p}" for p in found]
                continue
            out[kind][key] = value
    return out


def parse_request(params: Mapping[str, object]) -> tuple[JoinRequest | None, list[str]]:
    """The request, or None and every problem: missing, bad and unknown parameters."""
    problems = [f"Unknown query parameter {name!r}" for name in sorted(params)
                if name not in PARAMS]
    values = {name: _single(params, name, problems)
              for name in ("design_ref", "hostname", "ip", "external_ip", "domain")}
    for name in ("design_ref", "hostname", "ip"):
        if values[name] is None and not isinstance(params.get(name), list):
            problems.append(f"The {name} query parameter is required")
    host = values["hostname"]
    if host is not None and (len(host) > 253 or not _HOST.match(host)):
        problems.append(f"hostname {host!r} is not a node name (lower-case DNS subdomain)")
    for name in ("ip", "external_ip"):
        value = values[name]
        problem = _ip_problem(name, value) if value is not None else None
        if problem:
            problems.append(problem)
    domain = values["domain"]
    if domain is not None and not _HOST.match(domain):
        problems.append(f"domain {domain!r} is not a DNS domain")
    labels = _labels(params, problems)
    if problems:
        return None, problems
    return JoinRequest(design_ref=str(values["design_ref"]), hostname=str(host),
                       ip=str(values["ip"]), external_ip=values["external_ip"] or "127.0.0.1",
                       domain=domain or "local", labels=labels), []


_PRELUDE = """\
#!/bin/bash
# Join script for {host}, made by Promenade for design {ref}.
# Drydock's promjoin boot action places it on the host; the host's first boot runs it once.
set -euo pipefail

join_register_node() {{  # hostname ip domain external_ip
    mkdir -p /etc/kubernetes
    printf 'NODE_NAME=%s\\nNODE_IP=%s\\nDNS_DOMAIN=%s\\nEXTERNAL_IP=%s\\n' \\
        "$1" "$2" "$3" "$4" > /etc/kubernetes/node.env
}}

join_label() {{  # static|dynamic key=value
    printf '%s\\n' "$2" >> "/etc/kubernetes/node-labels.$1"
}}

join_start_kubelet() {{
    labels=$(cat /etc/kubernetes/node-labels.* 2>/dev/null | paste -sd, -)
    printf 'KUBELET_EXTRA_ARGS=--node-labels=%s\\n' "$labels" > /etc/default/kubelet
    systemctl enable --now kubelet
}}

join_done() {{
    echo "{host}: joined"
}}

"""


def render_script(request: JoinRequest) -> str:
    """The script for one node: a prelude defining the steps, then the steps."""
    q = shlex.quote
    lines = [_PRELUDE.format(host=request.hostname, ref=request.design_ref), STEPS_MARKER,
             f"join_register_node {q(request.hostname)} {q(request.ip)} {q(request.domain)} "
             f"{q(request.external_ip)}"]
    for kind in ("static", "dynamic"):
        for key, value in sorted(request.labels.get(kind, {}).items()):
            lines.append(f"join_label {kind} {q(f'{key}={value}')}")
    lines += ["join_start_kubelet", "join_done", ""]
    return "\n".join(lines)


def design_problems(request: JoinRequest, docs: Sequence[Document]) -> list[str]:
    """A design that names its nodes (drydock/BaremetalNode/v1) must name this host."""
    names = {str((d.get("metadata") or {}).get("name")) for d in docs
             if d.get("schema") == NODE_SCHEMA}
    if names and request.hostname not in names:
        return [f"hostname {request.hostname!r} is not a node of the design"]
    return []

