"""A small Yaook-like operator for the simulated site: per-node agents, l2-locks (spec 002).

    op = YaookOperator("https://127.0.0.1:6443", ca_file=plane.pki.ca_cert,
                       cert=(str(plane.pki.admin_cert), str(plane.pki.admin_key)),
                       selector="compute.yaook.cloud/hypervisor=true",
                       agents=("nova-compute",), poll_interval=0.2)
    op.start()   # a daemon thread reconciling every poll_interval against the apiserver
    ...
    op.stop()    # its pods and locks stay, as an operator's would when it stops

Constructor: `api` (the apiserver's base URL), `ca_file` (CA bundle of its serving cert), and
either `cert` (client cert, key) or a ready `session` (requests.Session carrying its own
authentication); `selector`, the scheduling label(s) of the nodes it serves (`key=value` or
`key`, comma-separated, all required); `agents`, the names of the dependent agents; `namespace`
(created if missing) for its pods; `poll_interval` (s); `grace_period` (s) of its deletions.

What it does, per node, as Yaook's documentation and spec 002 describe it:
- The L2 agent (pod `neutron-l2-agent-<node>`) runs on every node matching the selector (in
  Yaook it runs wherever one of its dependents' scheduling keys is set). Once it runs, the
  label `maintenance.yaook.cloud/maintenance-required-l2-agent` is set to "False" (again after
  it was recreated). When the node stops matching, that label is set to "True" and kept, and
  the L2 agent is deleted only once no `l2-lock.maintenance.yaook.cloud/*` annotation is left.
- Each dependent agent (pod `<agent>-<node>`) runs only where the node matches and that label
  is "False"; its lock `l2-lock.maintenance.yaook.cloud/<agent>: ''` is set before its pod is
  created, and removed only after the pod is gone. A label that is missing or not "False"
  (the maintenance signal: set by the L2 operator, or by whoever takes the node out of
  service) makes the operator delete the agent.
- Agents are (re)created only on a schedulable node (Yaook's agents go through the
  scheduler), so an agent removed from a cordoned node is not put back there.
Its pods carry Yaook's `state.yaook.cloud/parent-plural` label, have no owner (nothing else
recreates them) and do not tolerate the out-of-service taint. `history()` lists what it did and
what it saw done to its pods by others (`deleted-by-other`, with the locks held at the time).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

LOG = logging.getLogger(__name__)
MAINTENANCE_LABEL = "maintenance.yaook.cloud/maintenance-required-l2-agent"
LOCK_PREFIX = "l2-lock.maintenance.yaook.cloud/"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "sitesim-yaook"
AGENT_LABEL = "sitesim.berth.io/yaook-agent"
NODE_LABEL = "sitesim.berth.io/yaook-node"
PLURAL_LABEL = "state.yaook.cloud/parent-plural"
L2 = "neutron-l2-agent"
PLURALS = {L2: "neutronl2agents", "nova-compute": "novacomputenodes",
           "neutron-l3-agent": "neutronl3agents", "neutron-dhcp-agent": "neutrondhcpagents",
           "neutron-bgp-dragent": "neutronbgpdragents"}
Obj = dict[str, Any]


@dataclass(frozen=True)
class Event:
    """One thing the operator did or saw: `what` is lock-set, lock-released, agent-created,
    agent-delete, agent-gone, deleted-by-other, label."""

    at: float  # time.time()
    node: str
    what: str
    agent: str = ""
    detail: str = ""


def parse_selector(selector: str) -> list[tuple[str, str | None]]:
    """`k=v,k2` → [(k, v), (k2, None)] (None: the key must exist)."""
    out: list[tuple[str, str | None]] = []
    for part in (p.strip() for p in selector.split(",")):
        if part:
            key, eq, value = part.partition("=")
            out.append((key.strip(), value.strip() if eq else None))
    return out


class YaookOperator:
    """The L2 operator and the dependents' operators of spec 002, on a real apiserver."""

    def __init__(self, api: str, ca_file: str | Path, *, cert: tuple[str, str] | None = None,
                 session: requests.Session | None = None,
                 selector: str = "compute.yaook.cloud/hypervisor=true",
                 agents: Sequence[str] = ("nova-compute",), namespace: str = "yaook",
                 poll_interval: float = 0.2, grace_period: int = 1) -> None:
        self.api, self.verify = api.rstrip("/"), str(ca_file)
        self.session = session or requests.Session()
        if cert is not None:
            self.session.cert = cert
        self.selector, self.agents = parse_selector(selector), tuple(agents)
        self.namespace, self.poll, self.grace = namespace, poll_interval, grace_period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._fresh: set[str] = set()  # nodes whose L2 agent was (re)created, label not yet set
        self._mine: set[str] = set()  # pod UIDs this operator deleted
        self._seen: dict[str, tuple[str, str, bool]] = {}  # uid -> node, agent, deleting

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._ensure_namespace()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="yaook-operator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def history(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile()
            except (requests.RequestException, RuntimeError) as exc:
                LOG.warning("yaook operator: %s", exc)
            self._stop.wait(self.poll)

    # -- one reconciliation of every node ------------------------------------------------
    def reconcile(self) -> None:
        nodes = self._get("/api/v1/nodes")["items"]
        pods = self._get(f"/api/v1/namespaces/{self.namespace}/pods"
                         f"?labelSelector={MANAGED_BY}%3D{OPERATOR}")["items"]
        by_key = {(p["metadata"]["labels"].get(NODE_LABEL, ""),
                   p["metadata"]["labels"].get(AGENT_LABEL, "")): p for p in pods}
        self._watch_deletions(pods, {n["metadata"]["name"]: n for n in nodes})
        for node in nodes:
            meta = node["metadata"]
            name, labels = meta["name"], meta.get("labels") or {}
            notes = meta.get("annotations") or {}
            mine = {a: by_key.get((name, a)) for a in (L2, *self.agents)}
            relevant = (self.matches(labels) or any(mine.values()) or MAINTENANCE_LABEL in labels
                        or any(k.startswith(LOCK_PREFIX) for k in notes))
            if not relevant:
                continue
            cordoned = bool(node.get("spec", {}).get("unschedulable"))
            for agent in self.agents:
                self._dependent(name, agent, labels, notes, mine[agent], cordoned)
            self._l2(name, labels, mine[L2], cordoned)

    def matches(self, labels: dict[str, str]) -> bool:
        return bool(self.selector) and all(
            key in labels and (value is None or labels[key] == value)
            for key, value in self.selector)

    def _dependent(self, node: str, agent: str, labels: dict[str, str], notes: dict[str, str],
                   pod: Obj | None, cordoned: bool) -> None:
        lock = LOCK_PREFIX + agent
        wanted = (self.matches(labels) and labels.get(MAINTENANCE_LABEL) == "False"
                  and (pod is not None or not cordoned))
        if wanted:
            if lock not in notes:  # the lock first, at the very beginning
                self._annotate(node, {lock: ""})
                self._record(node, "lock-set", agent)
            if pod is None:
                self._create(node, agent)
        elif pod is not None:
            self._delete(node, agent, pod)
        elif lock in notes:  # its agent is gone: only now the lock goes
            self._annotate(node, {lock: None})
            self._record(node, "lock-released", agent)

    def _l2(self, node: str, labels: dict[str, str], pod: Obj | None, cordoned: bool) -> None:
        label = labels.get(MAINTENANCE_LABEL)
        if self.matches(labels):
            if pod is None and not cordoned:
                self._create(node, L2)
                self._fresh.add(node)
            elif (pod is not None and not pod["metadata"].get("deletionTimestamp")
                  and pod.get("status", {}).get("phase") == "Running"
                  and label != "False" and (label is None or node in self._fresh)):
                self._label(node, "False")
                self._fresh.discard(node)
            return
        if (pod is not None or label == "False") and label != "True":
            self._label(node, "True")  # kept, also once the agent is gone
        if pod is not None:
            locks = sorted(k for k in self._node_notes(node) if k.startswith(LOCK_PREFIX))
            if not locks:
                self._delete(node, L2, pod)

    # -- observation -----------------------------------------------------------------------
    def _watch_deletions(self, pods: list[Obj], nodes: dict[str, Obj]) -> None:
        """Record its pods' deletions by others, and the moment a deleted pod is gone."""
        current: dict[str, tuple[str, str, bool]] = {}
        for pod in pods:
            meta = pod["metadata"]
            labels = meta.get("labels") or {}
            current[meta["uid"]] = (labels.get(NODE_LABEL, ""), labels.get(AGENT_LABEL, ""),
                                    bool(meta.get("deletionTimestamp")))
        for uid, (node, agent, deleting) in current.items():
            before = self._seen.get(uid)
            if deleting and uid not in self._mine and (before is None or not before[2]):
                self._record(node, "deleted-by-other", agent, self._locks_of(nodes, node))
        for uid, (node, agent, deleting) in self._seen.items():
            if uid not in current:
                if uid not in self._mine and not deleting:
                    self._record(node, "deleted-by-other", agent, self._locks_of(nodes, node))
                self._record(node, "agent-gone", agent)
                self._mine.discard(uid)
        self._seen = current

    @staticmethod
    def _locks_of(nodes: dict[str, Obj], node: str) -> str:
        notes = (nodes.get(node, {}).get("metadata", {}).get("annotations") or {})
        return ",".join(sorted(k for k in notes if k.startswith(LOCK_PREFIX)))

    def _record(self, node: str, what: str, agent: str = "", detail: str = "") -> None:
        LOG.info("yaook operator: %s %s %s %s", node, what, agent, detail)
        with self._lock:
            self._events.append(Event(time.time(), node, what, agent, detail))

    # -- API -------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None,
              content_type: str = "application/json") -> requests.Response:
        return self.session.request(method, self.api + path, json=body, timeout=10,
                                    verify=self.verify, headers={"Content-Type": content_type})

    def _get(self, path: str) -> Obj:
        reply = self._call("GET", path)
        if reply.status_code != 200:
            raise RuntimeError(f"GET {path}: {reply.status_code} {reply.text[:200]}")
        result: Obj = reply.json()
        return result

    def _node_notes(self, node: str) -> dict[str, str]:
        """The node's annotations as they are now (a lock may have gone since the list)."""
        notes: dict[str, str] = self._get(f"/api/v1/nodes/{node}")["metadata"].get(
            "annotations") or {}
        return notes

    def _patch_node(self, node: str, meta: Obj) -> None:
        reply = self._call("PATCH", f"/api/v1/nodes/{node}", {"metadata": meta},
                           "application/merge-patch+json")
        if reply.status_code not in (200, 404):
            raise RuntimeError(f"PATCH node {node}: {reply.status_code} {reply.text[:200]}")

    def _annotate(self, node: str, notes: dict[str, str | None]) -> None:
        self._patch_node(node, {"annotations": notes})

    def _label(self, node: str, value: str) -> None:
        self._patch_node(node, {"labels": {MAINTENANCE_LABEL: value}})
        self._record(node, "label", L2, f"{MAINTENANCE_LABEL}={value}")

    def _ensure_namespace(self) -> None:
        reply = self._call("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        if reply.status_code not in (201, 409):
            raise RuntimeError(f"namespace {self.namespace}: {reply.status_code} {reply.text}")

    def _create(self, node: str, agent: str) -> None:
        labels = {MANAGED_BY: OPERATOR, AGENT_LABEL: agent, NODE_LABEL: node,
                  PLURAL_LABEL: PLURALS.get(agent, agent.replace("-", "") + "s"),
                  "state.yaook.cloud/parent-name": node, "state.yaook.cloud/component": agent}
        reply = self._call("POST", f"/api/v1/namespaces/{self.namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{agent}-{node}", "labels": labels},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": self.grace,
                     "containers": [{"name": agent, "image": f"registry.invalid/{agent}:1"}]}})
        if reply.status_code == 409:  # the previous one is still terminating
            return
        if reply.status_code != 201:
            raise RuntimeError(f"create {agent} on {node}: {reply.status_code} {reply.text}")
        self._record(node, "agent-created", agent)

    def _delete(self, node: str, agent: str, pod: Obj) -> None:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or meta["uid"] in self._mine:
            return
        self._mine.add(meta["uid"])
        reply = self._call("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{meta['name']}",
                           {"kind": "DeleteOptions", "apiVersion": "v1",
                            "gracePeriodSeconds": self.grace,
                            "preconditions": {"uid": meta["uid"]}})
        if reply.status_code not in (200, 404, 409):
            self._mine.discard(meta["uid"])
            raise RuntimeError(f"delete {meta['name']}: {reply.status_code} {reply.text}")
        self._record(node, "agent-delete", agent)
