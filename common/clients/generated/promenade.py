"""Promenade's wire types, generated from schemas/openapi/promenade.yaml: do not edit.

Regenerate with `make wiretypes` (python tools/wiretypes.py).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

from common.jsontypes import JSON


class EtcdCount(TypedDict):
    members: NotRequired[int]
    healthy: NotRequired[int]
    quorum: NotRequired[int]


class EtcdMemberHealth(TypedDict):
    name: NotRequired[str]
    healthy: NotRequired[bool]
    reachable: NotRequired[bool]
    leader: NotRequired[bool]
    on_node: NotRequired[bool]
    error: NotRequired[str]


class EtcdAfterLeaving(TypedDict):
    members: NotRequired[int]
    healthy: NotRequired[int]
    quorum: NotRequired[int]
    also_leaving: NotRequired[list[str]]
    allowed: NotRequired[bool]


class EtcdImpact(TypedDict):
    cluster: str
    threshold: int
    error: NotRequired[str]
    members: NotRequired[list[EtcdMemberHealth]]
    removing: NotRequired[list[str]]
    before: NotRequired[EtcdCount]
    after: NotRequired[EtcdCount]
    after_with_leaving: NotRequired[EtcdAfterLeaving | None]
    leader_move: NotRequired[bool]
    learners: NotRequired[list[str]]
    removal_in_flight: NotRequired[str | None]
    allowed: NotRequired[bool]


ReadyStatus: TypeAlias = Literal['True', 'False', 'Unknown']


class PreviewPhase(TypedDict):
    phase: NotRequired[str]
    runs: NotRequired[bool]
    note: NotRequired[str]


class Kubelet(TypedDict):
    ready: NotRequired[ReadyStatus]
    ready_since: NotRequired[str | None]


class Pods(TypedDict):
    total: NotRequired[int]
    by_owner_kind: NotRequired[dict[str, list[str]]]
    evictable: NotRequired[list[str]]


class EtcdMembership(TypedDict):
    cluster: NotRequired[str]
    member: NotRequired[str]


class Group(TypedDict):
    reason: NotRequired[str]
    count: NotRequired[int]
    pods: NotRequired[list[str]]


class DrainBlocker(TypedDict):
    kind: Literal['PodDisruptionBudget', 'EvictionLock']
    name: NotRequired[str]
    disruptions_allowed: NotRequired[int | None]
    current_healthy: NotRequired[int]
    desired_healthy: NotRequired[int]
    expected_pods: NotRequired[int]
    annotation: NotRequired[str]
    holder: NotRequired[str]
    pods: list[str]


class DisruptedPod(TypedDict):
    pod: NotRequired[str]
    budget: NotRequired[str]
    node: NotRequired[str]
    at: NotRequired[float]
    allowed_by: NotRequired[str]
    disruptions_allowed: NotRequired[int | None]


Href: TypeAlias = str


class MessageListItem(TypedDict):
    message: str
    error: bool
    kind: Literal['SimpleMessage', 'ValidationMessage', 'HealthMessage']


class Details(TypedDict):
    errorCount: int
    messageList: list[MessageListItem]


class DecommissionPreview(TypedDict):
    node: str
    fenced: bool
    kubernetes: NotRequired[dict[str, JSON] | None]
    phases: list[PreviewPhase]
    drain: NotRequired[dict[str, JSON] | None]
    capacity: NotRequired[dict[str, JSON] | None]
    etcd: list[EtcdImpact]
    blockers: list[str]
    warnings: list[str]


class DrainProgress(TypedDict):
    node: NotRequired[str]
    marker: NotRequired[str]
    phase: NotRequired[str]
    started_at: NotRequired[float]
    updated_at: NotRequired[float]
    pods_left: NotRequired[int]
    removed: NotRequired[int]
    groups: NotRequired[list[Group]]
    blockers: NotRequired[list[DrainBlocker]]
    disrupted: NotRequired[list[DisruptedPod]]


class NodeView(TypedDict):
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    cordoned: bool
    kubelet: Kubelet
    taints: NotRequired[list[dict[str, JSON]]]
    pods: Pods
    eviction_locks: list[str]
    etcd: list[EtcdMembership]
    drain_progress: NotRequired[DrainProgress | None]


class DecommissionPhase(TypedDict):
    name: str
    state: Literal['running', 'succeeded', 'failed', 'failed-not-fatal', 'skipped']
    attempts: int
    started_at: NotRequired[float | None]
    attempt_started_at: NotRequired[float | None]
    ended_at: NotRequired[float | None]
    outcome: NotRequired[str | None]
    messages: NotRequired[list[dict[str, JSON]]]
    attempt_state: NotRequired[dict[str, JSON]]


class DecommissionRun(TypedDict):
    id: str
    node: str
    state: Literal['running', 'succeeded', 'failed']
    phase: str | None
    phases: list[DecommissionPhase]
    fingerprint: NotRequired[str]
    params: NotRequired[dict[str, JSON]]
    created_by: NotRequired[str]
    takeovers: int
    created_at: float
    updated_at: NotRequired[float]
    ended_at: NotRequired[float | None]
    status_code: NotRequired[int | None]
    result: NotRequired[dict[str, JSON] | None]
    lease_owner: NotRequired[str | None]
    lease_expires: NotRequired[float | None]


class DesignLink(TypedDict):
    rel: NotRequired[str]
    href: Href
    type: NotRequired[str]


DesignRef: TypeAlias = DesignLink | Href


class Status(TypedDict):
    kind: Literal['Status']
    apiVersion: str
    metadata: dict[str, JSON]
    status: Literal['Success', 'Failure']
    message: str
    reason: str
    code: int
    retry: bool
    details: Details
