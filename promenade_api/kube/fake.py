"""An in-memory KubePort for unit tests: nodes, pods, scripted eviction answers, budgets the
Eviction API enforces, leases."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from promenade_api.kube.budget import Budget, selector_matches
from promenade_api.kube.model import EvictResult, Lease, Node, OwnerRef, Pod
from promenade_api.kube.port import KubeConflict, KubeNotFound, KubeUnavailable


class FakeKube:
    """Pods evicted successfully vanish at once unless listed in `lingering`."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}  # by uid
        self.daemonsets: set[tuple[str, str]] = {("kube-system", "ds")}
        self.evict_script: dict[str, list[EvictResult]] = {}  # pod name -> answers in order
        self.lingering: set[str] = set()  # pod names that never go away
        self.leases: dict[tuple[str, str], Lease] = {}
        self.budgets: list[Budget] = []
        self.budget_log: list[Budget] = []  # every budget state after the first, in order
        self.watch_step = 0.1  # a budget watch looks at the log this often (fake time)
        self.now: Callable[[], float] = lambda: 0.0  # the time evicted_at records
        self.evicted_at: dict[str, float] = {}
        self.calls: list[tuple[str, str]] = []
        self.evictions: list[str] = []
        self.deletions: list[str] = []
        self.down = False
        self.eviction_supported = True
        self.on_wait: Callable[[], None] | None = None
        self.on_watch: Callable[[float], None] | None = None
        self.on_taint: Callable[[str, dict[str, str]], None] | None = None
        self.on_evict: Callable[[Pod], None] | None = None  # after each granted eviction
        self._uids = itertools.count(1)
        self._versions = itertools.count(1)
        self._lock = threading.RLock()

    # -- building the world --------------------------------------------------------------
    def add_node(self, name: str, labels: Mapping[str, str] | None = None, **kw: Any) -> Node:
        node = Node(name=name, labels=dict(labels or {}), **kw)
        self.nodes[name] = node
        return node

    def add_pod(self, name: str, node: str, *, namespace: str = "default",
                owner: tuple[str, str] | None = ("ReplicaSet", "rs"), **kw: Any) -> Pod:
        owners = (OwnerRef(kind=owner[0], name=owner[1], controller=True),) if owner else ()
        pod = Pod(namespace=namespace, name=name, uid=f"uid-{next(self._uids)}", node=node,
                  owners=owners, **kw)
        self.pods[pod.uid] = pod
        return pod

    def pod_names(self, node: str) -> list[str]:
        return sorted(p.name for p in self.pods.values() if p.node == node)

    def _check(self, op: str, target: str) -> None:
        self.calls.append((op, target))
        if self.down:
            raise KubeUnavailable("Kubernetes API unreachable: connection refused")

    # -- KubePort ----------------------------------------------------------------------
    def ping(self) -> str:
        self._check("ping", "")
        return "v1.32.4-fake"

    def get_node(self, name: str) -> Node:
        self._check("get_node", name)
        if name not in self.nodes:
            raise KubeNotFound(f'nodes "{name}" not found')
        return self.nodes[name]

    def patch_node(self, name: str, *, labels: Mapping[str, str | None] | None = None,
                   annotations: Mapping[str, str | None] | None = None,
                   unschedulable: bool | None = None) -> Node:
        node = self.get_node(name)
        new_labels, new_ann = dict(node.labels), dict(node.annotations)
        for src, dst in ((labels, new_labels), (annotations, new_ann)):
            for key, value in (src or {}).items():
                if value is None:
                    dst.pop(key, None)
                else:
                    dst[key] = value
        node = replace(node, labels=new_labels, annotations=new_ann,
                       unschedulable=node.unschedulable if unschedulable is None
                       else unschedulable)
        self.nodes[name] = node
        return node

    def add_taint(self, name: str, taint: Mapping[str, str]) -> Node:
        self._check("add_taint", name)
        node = self.get_node(name)
        others = tuple(t for t in node.taints if (t.get("key"), t.get("effect"))
                       != (taint.get("key"), taint.get("effect")))
        node = replace(node, taints=(*others, dict(taint)))
        self.nodes[name] = node
        if self.on_taint:
            self.on_taint(name, dict(taint))
        return node

    def remove_taint(self, name: str, key: str, effect: str,
                     annotations: Mapping[str, str | None] | None = None) -> Node:
        self._check("remove_taint", name)
        node = self.get_node(name)
        kept = tuple(t for t in node.taints if (t.get("key"), t.get("effect")) != (key, effect))
        notes = {**node.annotations, **{k: v for k, v in (annotations or {}).items()
                                        if v is not None}}
        for k, v in (annotations or {}).items():
            if v is None:
                notes.pop(k, None)
        node = replace(node, taints=kept, annotations=notes)
        self.nodes[name] = node
        return node

    def list_pods(self, node: str) -> list[Pod]:
        self._check("list_pods", node)
        with self._lock:
            return sorted((p for p in self.pods.values() if p.node == node),
                          key=lambda p: p.key)

    def list_nodes(self) -> list[Node]:
        self._check("list_nodes", "")
        return [self.nodes[n] for n in sorted(self.nodes)]

    def list_all_pods(self) -> list[Pod]:
        self._check("list_all_pods", "")
        with self._lock:
            return sorted(self.pods.values(), key=lambda p: p.key)

    def list_budgets(self) -> list[Budget]:
        self._check("list_budgets", "")
        return list(self.budgets)

    def set_budget(self, budget: Budget) -> Budget:
        """Add or replace a budget (by namespace and name), as a new resourceVersion that
        watches see."""
        with self._lock:
            stored = replace(budget, version=str(next(self._versions)))
            self.budgets = [b for b in self.budgets if b.key != budget.key] + [stored]
            self.budget_log.append(stored)
            return stored

    def budget(self, key: str) -> Budget:
        [found] = [b for b in self.budgets if b.key == key]
        return found

    def _budget_refusal(self, pod: Pod) -> EvictResult | None:
        """The Eviction API's check: one matching budget whose status allows a disruption
        is decremented; none allowing, a 429 naming it; several, a 500."""
        mine = [b for b in self.budgets if b.namespace == pod.namespace and not b.gone
                and selector_matches(b.selector, pod.labels)]
        if len(mine) > 1:
            return EvictResult("failed", "HTTP 500: This pod has more than one "
                                         "PodDisruptionBudget")
        if not mine:
            return None
        budget = mine[0]
        if budget.allowing < 1:
            return EvictResult(
                "retry", "Cannot evict pod as it would violate the pod's disruption budget. "
                f"The disruption budget {budget.name} needs {budget.desired_healthy} healthy "
                f"pods and has {budget.current_healthy} currently", budget=budget.name)
        self.set_budget(replace(budget, disruptions_allowed=budget.disruptions_allowed - 1,
                                disrupted=budget.disrupted | {pod.name}))
        return None

    def owner_exists(self, kind: str, namespace: str, name: str) -> bool:
        self._check("owner_exists", name)
        return (namespace, name) in self.daemonsets

    def evict(self, pod: Pod, grace_period: int | None) -> EvictResult:
        self._check("evict", pod.name)
        if not self.eviction_supported:
            return EvictResult("unsupported", "the server could not find the requested resource")
        with self._lock:
            script = self.evict_script.get(pod.name)
            answer = script.pop(0) if script else EvictResult("evicted")
            if pod.uid not in self.pods:
                return EvictResult("gone", f'pods "{pod.name}" not found')
            if answer.outcome == "evicted":
                answer = self._budget_refusal(pod) or answer
            if answer.outcome == "evicted":
                self.evictions.append(pod.name)
                self.evicted_at[pod.name] = self.now()
                if self.on_evict:
                    self.on_evict(pod)
            if answer.outcome in ("evicted", "gone"):  # "gone": it vanished meanwhile
                self._remove(pod)
            return answer

    def delete_pod(self, pod: Pod, grace_period: int | None) -> EvictResult:
        self._check("delete_pod", pod.name)
        with self._lock:
            if pod.uid not in self.pods:
                return EvictResult("gone")
            self.deletions.append(pod.name)
            self._remove(pod)
            return EvictResult("evicted")

    def _remove(self, pod: Pod) -> None:
        if pod.name in self.lingering:
            self.pods[pod.uid] = replace(pod, deleting=True)
        else:
            self.pods.pop(pod.uid, None)

    def wait_pods_gone(self, node: str, uids: Collection[str], timeout: float) -> set[str]:
        self._check("wait_pods_gone", node)
        if self.on_wait:
            self.on_wait()
        with self._lock:
            return {u for u in uids if u in self.pods}

    def watch_node(self, name: str, version: str, timeout: float) -> bool:
        """`on_watch(timeout)` stands for the wait (e.g. a fake clock's sleep); True when the
        node's version is no longer `version`."""
        self._check("watch_node", name)
        if self.on_watch:
            self.on_watch(timeout)
        node = self.nodes.get(name)
        return node is None or node.version != version

    def watch_budgets(self, namespace: str | None, version: str, timeout: float,
                      wake: Callable[[Budget], bool]) -> str:
        """Passes the current budgets when `version` is "", then the logged states after the
        cursor (the fake's resourceVersion: how many logged states were seen), waiting for
        new ones in steps of `watch_step` through `on_watch`, up to `timeout`."""
        self._check("watch_budgets", namespace or "")
        with self._lock:
            seen = int(version) if version else len(self.budget_log)
            current = [] if version else list(self.budgets)
        if any(self._in(b, namespace) and wake(b) for b in current):
            return str(seen)
        waited = 0.0
        while True:
            with self._lock:
                fresh = self.budget_log[seen:]
            for budget in fresh:
                seen += 1
                if self._in(budget, namespace) and wake(budget):
                    return str(seen)
            if waited >= timeout - 1e-9:
                return str(seen)
            if self.on_watch is None:
                raise AssertionError("a budget watch waits through on_watch: set it")
            step = min(self.watch_step, timeout - waited)
            self.on_watch(step)
            waited += step

    def delete_budget(self, key: str) -> None:
        with self._lock:
            self.budget_log.append(replace(self.budget(key), gone=True,
                                           version=str(next(self._versions))))
            self.budgets = [b for b in self.budgets if b.key != key]

    @staticmethod
    def _in(budget: Budget, namespace: str | None) -> bool:
        return namespace is None or budget.namespace == namespace

    def delete_node(self, name: str) -> None:
        self.get_node(name)
        self.calls.append(("delete_node", name))
        del self.nodes[name]

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        self._check("get_lease", name)
        return self.leases.get((namespace, name))

    def create_lease(self, namespace: str, lease: Lease) -> Lease:
        self._check("create_lease", lease.name)
        with self._lock:
            if (namespace, lease.name) in self.leases:
                raise KubeConflict(f'leases "{lease.name}" already exists')
            stored = replace(lease, version=str(next(self._versions)))
            self.leases[(namespace, lease.name)] = stored
            return stored

    def update_lease(self, namespace: str, lease: Lease) -> Lease:
        self._check("update_lease", lease.name)
        with self._lock:
            current = self.leases.get((namespace, lease.name))
            if current is None:
                raise KubeNotFound(f'leases "{lease.name}" not found')
            if lease.version != current.version:
                raise KubeConflict("the object has been modified")
            stored = replace(lease, version=str(next(self._versions)))
            self.leases[(namespace, lease.name)] = stored
            return stored
