"""Shipyard's wire types, generated from schemas/openapi/shipyard.yaml: do not edit.

Regenerate with `make wiretypes` (python tools/wiretypes.py).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from common.jsontypes import JSON


class TagData(TypedDict):
    pass


class Revision(TypedDict):
    id: NotRequired[int]
    createdAt: NotRequired[str]
    createdBy: NotRequired[str | None]
    buckets: NotRequired[list[str]]
    tags: NotRequired[list[str]]


class Revisions(TypedDict):
    count: int
    results: list[Revision]


Note = TypedDict(
    'Note',
    {
        'note_id': NotRequired[str],
        'assoc_id': NotRequired[str],
        'subject': NotRequired[str],
        'sub_type': NotRequired[Literal['action metadata', 'step metadata']],
        'note_val': NotRequired[str],
        'verbosity': NotRequired[int],
        'note_timestamp': NotRequired[str | None],
        'resolved_url_value': NotRequired[str | None],
        'at': NotRequired[str | None],
        'message': NotRequired[str | None],
        'try': NotRequired[int | None],
    },
)


class StepSummary(TypedDict):
    id: NotRequired[str]
    url: NotRequired[str]
    index: NotRequired[int]
    state: NotRequired[Literal['running', 'up_for_retry', 'up_for_reschedule', 'success', 'failed', 'skipped'] | None]
    step_state: NotRequired[Literal['pending', 'running', 'waiting', 'success', 'failed', 'skipped']]
    notes: NotRequired[list[Note]]


class Finding(TypedDict):
    node: NotRequired[str | None]
    source: Literal['shipyard', 'promenade', 'drydock']
    message: str


class Call(TypedDict):
    service: NotRequired[Literal['shipyard', 'promenade', 'drydock']]
    request: NotRequired[str]
    why: NotRequired[str]
    node: NotRequired[str | None]
    step: NotRequired[str | None]
    runs: NotRequired[list[str]]


class ConflictingAction(TypedDict):
    id: str
    name: str
    state: str
    target_nodes: list[str]
    site_wide: bool


class Node(TypedDict):
    node: NotRequired[str]


class CommandAuditItem(TypedDict):
    id: NotRequired[int]
    action_id: NotRequired[str]
    command: NotRequired[str]
    user: NotRequired[str | None]
    context_marker: NotRequired[str | None]
    datetime: NotRequired[str]
    outcome: NotRequired[str]


class MessageListItem(TypedDict):
    message: str
    error: bool
    kind: Literal['SimpleMessage', 'ValidationMessage', 'HealthMessage']


class Details(TypedDict):
    errorCount: int
    messageList: list[MessageListItem]


class PlanRequest(TypedDict):
    name: Literal['redeploy_server', 'relabel_nodes', 'deploy_site', 'update_site']
    parameters: NotRequired[dict[str, JSON]]


class ActionRequest(TypedDict):
    name: Literal['redeploy_server', 'relabel_nodes', 'deploy_site', 'update_site', 'test_site', 'update_software']
    parameters: NotRequired[dict[str, JSON] | None]
    plan_id: NotRequired[str]


class Metadata(TypedDict):
    schema: str
    name: str
    layeringDefinition: NotRequired[dict[str, JSON]]
    labels: NotRequired[dict[str, JSON]]
    substitutions: NotRequired[list[dict[str, JSON]]]
    replacement: NotRequired[bool]
    storagePolicy: NotRequired[str]


class Document(TypedDict):
    schema: str
    metadata: Metadata
    data: JSON


class Step(TypedDict):
    id: NotRequired[str]
    task_id: NotRequired[str]
    name: NotRequired[str]
    node: NotRequired[str | None]
    index: NotRequired[int]
    position: NotRequired[int]
    state: NotRequired[Literal['running', 'up_for_retry', 'up_for_reschedule', 'success', 'failed', 'skipped'] | None]
    step_state: NotRequired[Literal['pending', 'running', 'waiting', 'success', 'failed', 'skipped']]
    start_date: NotRequired[str | None]
    end_date: NotRequired[str | None]
    duration: NotRequired[float | None]
    try_number: NotRequired[int]
    operator: NotRequired[str]
    dag_id: NotRequired[str | None]
    dag_run_id: NotRequired[str]
    execution_date: NotRequired[str | None]
    logical_date: NotRequired[str | None]
    start: NotRequired[str | None]
    end: NotRequired[str | None]
    attempts: NotRequired[int]
    failures: NotRequired[int]
    reason: NotRequired[str | None]
    depends_on: NotRequired[list[str]]
    next_attempt: NotRequired[str | None]
    notes: NotRequired[list[Note]]
    details: NotRequired[dict[str, JSON]]
    output: NotRequired[dict[str, JSON]]
    url: NotRequired[str]


class Workflow(TypedDict):
    workflow_id: NotRequired[str]
    dag_id: NotRequired[str]
    id: NotRequired[str]
    run_id: NotRequired[str]
    dag_run_id: NotRequired[str]
    execution_date: NotRequired[str]
    logical_date: NotRequired[str]
    start_date: NotRequired[str | None]
    end_date: NotRequired[str | None]
    state: NotRequired[Literal['queued', 'running', 'paused', 'success', 'failed'] | None]
    external_trigger: NotRequired[bool]
    conf: NotRequired[dict[str, JSON]]
    action_id: NotRequired[str]
    action_state: NotRequired[str]
    steps: NotRequired[list[Step]]
    sub_dags: NotRequired[list[dict[str, JSON]]]


class Validation(TypedDict):
    id: NotRequired[str]
    action_id: NotRequired[str]
    validation_name: NotRequired[str]
    details: NotRequired[dict[str, JSON]]
    message: NotRequired[str]
    error: NotRequired[bool]
    kind: NotRequired[str]


class Group(TypedDict):
    name: NotRequired[str]
    position: NotRequired[int]
    critical: NotRequired[bool]
    depends_on: NotRequired[list[str]]
    success_criteria: NotRequired[dict[str, JSON]]
    nodes: NotRequired[list[str]]
    calls: NotRequired[list[Call]]


class Fact(TypedDict):
    step: NotRequired[str]
    fact: NotRequired[str]
    value: NotRequired[JSON]
    rule: NotRequired[str]


class Plan(TypedDict):
    id: str
    action: str
    parameters: dict[str, JSON]
    revision_id: NotRequired[int | None]
    design_ref: NotRequired[str | None]
    created: str
    expires: str
    expired: bool
    user: NotRequired[str | None]
    context_marker: NotRequired[str | None]
    verdict: Literal['clear', 'warnings', 'blocked']
    blockers: list[Finding]
    warnings: list[Finding]
    conflicts: list[ConflictingAction]
    steps: list[str]
    nodes: list[Node]
    groups: list[Group]
    calls: list[Call]
    facts: list[Fact]
    url: NotRequired[str]


class Action(TypedDict):
    id: NotRequired[str]
    name: NotRequired[str]
    parameters: NotRequired[dict[str, JSON]]
    action_lifecycle: NotRequired[Literal['Pending', 'Processing', 'Paused', 'Complete', 'Failed']]
    state: NotRequired[Literal['pending', 'running', 'paused', 'stopping', 'complete', 'failed', 'stopped']]
    dag_id: NotRequired[str]
    dag_execution_date: NotRequired[str]
    dag_status: NotRequired[Literal['queued', 'running', 'paused', 'success', 'failed'] | None]
    timestamp: NotRequired[str | None]
    committed_rev_id: NotRequired[int | None]
    notes: NotRequired[list[Note]]
    context_marker: NotRequired[str]
    user: NotRequired[str | None]
    datetime: NotRequired[str]
    started: NotRequired[str | None]
    ended: NotRequired[str | None]
    revision_id: NotRequired[int | None]
    target_nodes: NotRequired[list[str]]
    site_wide: NotRequired[bool]
    reason: NotRequired[str | None]
    message: NotRequired[str]
    validations: NotRequired[list[Validation]]
    steps: NotRequired[list[Step | StepSummary]]
    step_counts: NotRequired[dict[str, int]]
    command_audit: NotRequired[list[CommandAuditItem]]


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
