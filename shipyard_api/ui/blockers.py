"""What blocks, for a reader at 3 a.m.: each blocker's reason (PDB, lock, quorum, BMC, ...)
and the object that blocks, read from the messages the owners of those facts wrote.

Plans and actions carry blockers as sentences (Promenade's PDB and etcd findings, Drydock's
BMC and wipe findings, Shipyard's path and conflict checks); the web view groups them by the
object named in the sentence, so the operator sees which budget, lock or cluster to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shipyard_api.ui.fields import entries

# (key, heading, pattern naming the object or None, how the object is written)
RULES: tuple[tuple[str, str, re.Pattern[str], str], ...] = (
    ("pdb", "PodDisruptionBudget",
     re.compile(r"(?:PodDisruptionBudget|PDB|disruption budget) (?P<o>[\w.\-/]+)"),
     "PodDisruptionBudget {o}"),
    ("lock", "Lock",
     re.compile(r"(?:[Ee]viction|[Aa]gent) lock(?:\(s\))? (?P<o>.+?) held"
                r"(?: by (?P<by>[^\s:;,]+))?"),
     "lock {o}"),
    ("quorum", "etcd quorum", re.compile(r"etcd cluster (?P<o>[\w.\-]+)"), "etcd cluster {o}"),
    ("bmc", "BMC", re.compile(
        r"(?:BMC (?P<o>[^\s;,()]+) )?(?:did not report a power state|reported no power state)"
        r"|its power-off could not be confirmed|needs it to power off and wipe"), "BMC {o}"),
    ("task", "Drydock task", re.compile(r"held by running task (?P<o>\S+)"), "task {o}"),
    ("wipe", "Disk wipe", re.compile(r"(?:erase|preserve_local_storage|[Ww]ipe)"), ""),
    ("retired", "Retired node", re.compile(r"\bis retired\b"), ""),
    ("conflict", "Conflicting action",
     re.compile(r"Conflicting actions are still active: (?P<o>\S+ \S+)"), "action {o}"),
    ("group", "Deployment group", re.compile(r"^Group (?P<o>[\w.\-]+)"), "group {o}"),
    ("capacity", "Capacity", re.compile(r"would stay Pending"), ""),
    ("design", "Design", re.compile(r"revision|[Dd]eployment ?[Ss]trategy|design"), ""),
)
ORDER = [key for key, *_ in RULES] + ["other"]
# The phase or step of a redeploy that a reason holds up (marked on the plan's timeline).
HOLDS = {"pdb": "drain", "lock": "drain", "capacity": "drain", "quorum": "remove-etcd",
         "bmc": "destroy_nodes", "wipe": "destroy_nodes", "task": "destroy_nodes",
         "retired": "destroy_nodes"}


@dataclass(frozen=True)
class Finding:
    """One blocker or warning: its reason, the object that blocks, where and what."""

    reason: str  # a key of RULES, or "other"
    heading: str
    obj: str  # the object that blocks ("PodDisruptionBudget demo/web"), or the node
    node: str | None
    message: str
    source: str | None = None


def classify(message: str, node: str | None = None, source: str | None = None,
             bmc: str | None = None) -> Finding:
    """The reason and object of one message; `bmc` describes the node's BMC when known."""
    for key, heading, pattern, written in RULES:
        match = pattern.search(message)
        if match is None:
            continue
        found = {k: v for k, v in match.groupdict().items() if v}
        if key == "bmc":
            found["o"] = bmc or found.get("o") or (f"of {node}" if node else "of the node")
        obj = written.format(**found) if "o" in found and written else ""
        if key == "lock" and found.get("by"):
            obj += f" (held by {found['by']})"
        if key == "wipe" and node:
            obj = f"disks of {node}"
        if key == "retired" and node:
            obj = f"node {node}"
        return Finding(key, heading, obj or (f"node {node}" if node else ""), node,
                       message, source)
    return Finding("other", "Other", f"node {node}" if node else "", node, message, source)


def bmc_of(entry: Mapping[str, object]) -> str | None:
    """'redfish 127.0.0.1:8000' from a plan node's baremetal.bmc section."""
    baremetal = entry.get("baremetal")
    bmc = baremetal.get("bmc") if isinstance(baremetal, Mapping) else None
    if not isinstance(bmc, Mapping) or not bmc.get("address"):
        return None
    return " ".join(str(p) for p in (bmc.get("type"), bmc.get("address")) if p)


def findings(items: object, bmcs: Mapping[str, str] | None = None) -> list[Finding]:
    """A plan's blockers or warnings ({node, source, message} or bare strings)."""
    out = []
    for item in entries(items):
        if isinstance(item, Mapping):
            node = str(item["node"]) if item.get("node") else None
            out.append(classify(str(item.get("message") or ""), node,
                                str(item.get("source") or "") or None,
                                (bmcs or {}).get(node or "")))
        else:
            out.append(classify(str(item)))
    return out


def grouped(items: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings by reason, in a fixed order (PDB, lock, quorum, BMC, ... other)."""
    by: dict[str, list[Finding]] = {}
    for f in items:
        by.setdefault(f.reason, []).append(f)
    return [(k, by[k]) for k in ORDER if k in by]
