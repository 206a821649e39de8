"""Drydock's wire types, generated from schemas/openapi/drydock.yaml: do not edit.

Regenerate with `make wiretypes` (python tools/wiretypes.py).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

from common.jsontypes import JSON


class RetirementRequest(TypedDict):
    retired: bool
    retired_reason: NotRequired[str | None]


class BudgetRenewRequest(TypedDict):
    lease_seconds: NotRequired[float]


class BootActionDetail(TypedDict):
    message: str
    error: bool


class BootActionReport(TypedDict):
    status: NotRequired[Literal['success', 'failure', 'Success', 'Failure']]
    details: NotRequired[list[BootActionDetail]]


Href: TypeAlias = str


class DesignLink(TypedDict):
    rel: NotRequired[str]
    href: Href
    type: NotRequired[str]


DesignRef: TypeAlias = Href | DesignLink


Labels: TypeAlias = dict[str, str] | list[dict[str, str]]


class TaskRequestContext(TypedDict):
    context_marker: NotRequired[str | None]
    end_user: NotRequired[str | None]


TaskStatus: TypeAlias = Literal['requested', 'queued', 'running', 'terminating', 'terminated', 'complete']


ResultStatus: TypeAlias = Literal['incomplete', 'success', 'partial_success', 'failure']


class BuildData(TypedDict):
    node_name: str
    task_id: str | None
    collected_date: str | None
    generator: str
    data_format: Literal['application/json', 'text/plain']
    data_element: str


class MessageListItem(TypedDict):
    message: str
    error: bool


class MessageDetails(TypedDict):
    errorCount: int
    messageList: list[MessageListItem]


PowerPolicy: TypeAlias = Literal['soft-then-hard', 'soft-only', 'hard']


class PowerRecord(TypedDict):
    power_policy: NotRequired[PowerPolicy]
    grace_period: NotRequired[float]
    grace_period_from: NotRequired[Literal['request', 'design', 'config']]
    outcome: NotRequired[Literal['graceful', 'forced', 'hard', 'already-off', 'not-off', 'in-progress']]
    forced_after: NotRequired[float]
    summary: NotRequired[str]
    at: NotRequired[float]


class BudgetSlot(TypedDict):
    holder: NotRequired[str]
    domain: NotRequired[str]
    node: NotRequired[str]
    budget: NotRequired[int]
    description: NotRequired[str | None]
    taken: NotRequired[float]
    lease_expires: NotRequired[float]


class BudgetBlocker(TypedDict):
    domain: NotRequired[str]
    budget: NotRequired[int]
    holders: NotRequired[list[BudgetSlot]]
    message: NotRequired[str]


class MessageListItem1(TypedDict):
    message: str
    error: bool
    kind: Literal['SimpleMessage', 'ValidationMessage', 'HealthMessage']


class Details(TypedDict):
    errorCount: int
    messageList: list[MessageListItem1]


class WipePlanRequest(TypedDict):
    design_ref: DesignRef
    node_names: list[str]
    options: NotRequired[dict[str, JSON] | None]


class RebootRequest(TypedDict):
    mode: NotRequired[Literal['soft', 'hard']]
    power_policy: NotRequired[PowerPolicy]
    grace_period: NotRequired[float]
    key: NotRequired[str | None]
    value: NotRequired[JSON]


class ValidateDesignBody(TypedDict):
    design_ref: DesignRef


ValidateDesignRequest: TypeAlias = DesignRef | ValidateDesignBody


class BudgetSlotRequest(TypedDict):
    holder: str
    node: str
    design_ref: DesignRef
    lease_seconds: NotRequired[float]
    description: NotRequired[str]
    dry_run: NotRequired[bool]


class FilterItem(TypedDict):
    filter_type: NotRequired[Literal['union', 'intersection']]
    node_names: NotRequired[list[str]]
    node_tags: NotRequired[list[str]]
    node_labels: NotRequired[Labels]
    rack_names: NotRequired[list[str]]
    rack_labels: NotRequired[Labels]


class NodeFilter(TypedDict):
    filter_set_type: NotRequired[Literal['union', 'intersection']]
    filter_set: list[FilterItem]


class TaskOptions(TypedDict):
    power_policy: NotRequired[PowerPolicy]
    grace_period: NotRequired[float]
    force: NotRequired[bool]
    preserve_local_storage: NotRequired[bool]
    erase: NotRequired[Literal['secure', 'secure_only', 'quick', 'zero']]
    os_disk_erase: NotRequired[Literal['bmc', 'none']]
    retire: NotRequired[bool]
    retired_reason: NotRequired[str]
    all_nodes: NotRequired[bool]


class TaskRequest(TypedDict):
    kind: NotRequired[Literal['Task']]
    Kind: NotRequired[Literal['Task']]
    apiVersion: NotRequired[Literal['v1', 'v1.0']]
    api_version: NotRequired[Literal['v1', 'v1.0']]
    action: Literal['validate_design', 'verify_site', 'prepare_site', 'verify_nodes', 'prepare_nodes', 'deploy_nodes', 'destroy_nodes', 'relabel_nodes', 'power_off_nodes']
    design_ref: DesignRef
    node_filter: NotRequired[NodeFilter | None]
    budget: NotRequired[Literal['wait', 'refuse']]
    budget_holder: NotRequired[str]
    options: NotRequired[TaskOptions]


class TaskResult(TypedDict):
    kind: NotRequired[Literal['Status']]
    Kind: NotRequired[Literal['Status']]
    apiVersion: NotRequired[str]
    metadata: NotRequired[dict[str, JSON]]
    status: NotRequired[ResultStatus]
    message: NotRequired[str]
    reason: NotRequired[str]
    successes: NotRequired[list[str]]
    failures: NotRequired[list[str]]
    skipped: NotRequired[list[str]]
    links: NotRequired[list[JSON]]
    details: NotRequired[MessageDetails]


class Task(TypedDict):
    kind: Literal['Task']
    Kind: NotRequired[Literal['Task']]
    apiVersion: NotRequired[str]
    task_id: str
    action: str
    parent_task_id: NotRequired[str | None]
    subtask_id_list: list[str]
    status: TaskStatus
    node: NotRequired[str | None]
    step: NotRequired[str | None]
    result: TaskResult
    design_ref: NotRequired[DesignRef]
    node_filter: NotRequired[NodeFilter | None]
    options: NotRequired[dict[str, JSON]]
    created: NotRequired[str | None]
    created_by: NotRequired[str | None]
    updated: NotRequired[str | None]
    completed: NotRequired[str | None]
    terminated: NotRequired[str | None]
    terminated_by: NotRequired[str | None]
    terminate: NotRequired[bool]
    request_context: NotRequired[TaskRequestContext]
    retry: NotRequired[dict[str, JSON]]


class BootAction(TypedDict):
    action_id: NotRequired[str]
    action_name: NotRequired[str]
    node_name: NotRequired[str]
    task_id: NotRequired[str]
    action_status: NotRequired[Literal['incomplete', 'success', 'failure', 'unreported']]
    signaling: NotRequired[bool]
    details: NotRequired[list[dict[str, JSON]]]
    created: NotRequired[float]
    updated: NotRequired[float]


class Teardown(TypedDict):
    state: NotRequired[Literal['in_progress', 'partial', 'complete']]
    id: NotRequired[str]
    task: NotRequired[str]
    last_step: NotRequired[str | None]
    cause: NotRequired[str | None]
    steps_done: NotRequired[list[str]]
    erased: NotRequired[dict[str, JSON]]


class Node(TypedDict):
    hostname: NotRequired[str]
    bootactions: NotRequired[list[BootAction]]
    bootaction_refusals: NotRequired[list[dict[str, JSON]]]
    name: NotRequired[str]
    in_design: NotRequired[bool]
    provisioner: NotRequired[Literal['maas', 'ironic'] | None]
    rack: NotRequired[str | None]
    tags: NotRequired[list[str]]
    labels: NotRequired[dict[str, JSON]]
    oob_type: NotRequired[str | None]
    oob_address: NotRequired[str | None]
    power_address: NotRequired[str | None]
    maas_system_id: NotRequired[str | None]
    maas_status: NotRequired[str | None]
    status_name: NotRequired[str | None]
    memory: NotRequired[int | None]
    cpu_count: NotRequired[int | None]
    boot_mac: NotRequired[str | None]
    boot_ip: NotRequired[str | None]
    maas_error: NotRequired[str | None]
    power_state: NotRequired[str | None]
    power_error: NotRequired[str | None]
    retired: NotRequired[bool]
    retired_reason: NotRequired[str | None]
    torn_down: NotRequired[bool]
    teardown: NotRequired[Teardown | None]
    pending_reboot_since: NotRequired[str | None]
    last_powered_on: NotRequired[str | None]
    last_task_id: NotRequired[str | None]
    reboot_error: NotRequired[str | None]


class Request(TypedDict):
    key: NotRequired[str | None]
    mode: NotRequired[Literal['soft', 'hard']]
    power_policy: NotRequired[PowerPolicy]
    grace_period: NotRequired[float | None]
    power: NotRequired[PowerRecord | None]
    value: NotRequired[JSON]
    created: NotRequired[str]
    created_by: NotRequired[str | None]


class Reboots(TypedDict):
    node: NotRequired[str]
    power_state: NotRequired[str | None]
    pending_reboot_since: NotRequired[str | None]
    last_powered_on: NotRequired[str | None]
    reboot_error: NotRequired[str | None]
    last_power_off: NotRequired[PowerRecord | None]
    requests: NotRequired[list[Request]]


class BudgetSlots(TypedDict):
    holder: NotRequired[str]
    node: NotRequired[str]
    domains: NotRequired[list[str]]
    blockers: NotRequired[list[BudgetBlocker]]
    slots: NotRequired[list[BudgetSlot]]


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


class NodeFilterRequest(TypedDict):
    design_ref: DesignRef
    node_filter: NotRequired[NodeFilter | None]
    exclude_retired: NotRequired[bool]
