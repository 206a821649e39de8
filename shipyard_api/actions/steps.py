"""Steps shared by several actions: preflight, design resolution, Drydock tasks, site tags."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from common.clients.drydock import FINISHED, NodeFilter, ResultStatus
from common.context import RequestContext
from common.documents import validate_documents
from common.errors import BerthError, ServiceUnavailable
from common.jsontypes import JSON, as_float, as_int
from common.workflow import Outcome, StepPolicy, backoff_delay, done, failed, retry_after
from shipyard_api.actions.design import deployment_configuration, etcd_membership, node_names
from shipyard_api.actions.params import version_of
from shipyard_api.actions.ports import Services, services
from shipyard_api.workflow.definitions import FinishContext, StepContext
from shipyard_api.workflow.states import StepState

LOG = logging.getLogger(__name__)
FOLLOW_LOOKS = 8  # Drydock task changes one attempt follows before the engine persists it
# Polling a Drydock task (a Drydock without long-polls, or one holding its most long-polls):
# the first look this soon after the task's creation, then a tenth of the task's age, at
# most the DeploymentConfiguration interval (common.workflow.backoff_delay).
FIRST_POLL = 0.5
POLL_FRACTION = 0.1


def target_version(ctx: StepContext) -> str:
    return version_of(str(ctx.parameters.get("target-revision", "committed")))


def preflight(ctx: StepContext) -> Outcome:
    """The target revision exists (else MissingPrecondition) and both peers are healthy."""
    svc = services(ctx)
    revision = ctx.revision_id or svc.documents.revision_id(target_version(ctx))
    if revision is None:
        return failed("MissingPrecondition",
                      f"No {ctx.parameters.get('target-revision', 'committed')} revision "
                      "of the design exists; nothing was changed")
    rc = ctx.request_context()
    unhealthy = []
    for name, port in (("Promenade", svc.promenade), ("Drydock", svc.drydock)):
        try:
            ok = port.healthy(rc)
        except BerthError:
            ok = False
        if not ok:
            unhealthy.append(name)
    if unhealthy:
        raise ServiceUnavailable(f"Not healthy: {', '.join(unhealthy)}")
    return done({"revision_id": revision}, details={"revision_id": revision},
                note=f"Using design revision {revision}; Promenade and Drydock healthy")


def preflight_policy(ctx: StepContext) -> StepPolicy:
    return services(ctx).settings.policy(600)


def resolve_design(ctx: StepContext) -> Outcome:
    """Read and validate the revision's rendered documents; keep what later steps need."""
    svc = services(ctx)
    revision = as_int(ctx.output("preflight")["revision_id"])
    docs = svc.documents.rendered_documents(revision, cleartext=True)
    problems = [m for m in validate_documents(docs) if m.get("error")]
    if problems:
        return failed("InvalidDesign", f"Revision {revision} has {len(problems)} invalid "
                      "document(s)", {"messageList": problems})
    nodes = node_names(docs)
    targets = list(ctx.parameters.get("target_nodes") or [])
    # the targets were checked against this revision when the action was created; only an
    # action created before any revision existed has them checked here
    unknown = [n for n in targets if n not in nodes] if ctx.revision_id is None else []
    if unknown:
        return failed("UnknownNodes", f"Not nodes of revision {revision}: {', '.join(unknown)}")
    design_ref = svc.documents.design_ref(revision, svc.settings.public_url)
    output = {"revision_id": revision, "design_ref": design_ref, "nodes": nodes,
              "config": deployment_configuration(docs), "etcd": etcd_membership(docs)}
    return done(output, details={"revision_id": revision, "design_ref": design_ref,
                                 "documents": len(docs)},
                note=f"Design revision {revision} valid ({len(docs)} documents)")


def design(ctx: StepContext) -> Mapping[str, Any]:
    return ctx.output("resolve_design")


def config_value(ctx: StepContext, section: str, key: str) -> float:
    cfg = design(ctx).get("config") or {}
    return float((cfg.get(section) or {}).get(key, 30))


def node_status_backoff(ctx: StepContext, since: float, *, first: float = FIRST_POLL) -> float:
    """How long a wait on a (re)deployed node (Ready in Kubernetes, its boot action reports)
    sleeps before looking again: `first` after its first look (at `since`), then a tenth of
    the time waited, at most every kubernetes.node_status_interval."""
    return backoff_delay(config_value(ctx, "kubernetes", "node_status_interval"),
                         ctx.now - since, first=first, fraction=POLL_FRACTION)


def drydock_task(ctx: StepContext, action: str, node_filter: NodeFilter | None,
                 options: Mapping[str, JSON], interval: float) -> Outcome:
    """Create the Drydock task once (idempotency key), then follow it until it ends: each
    attempt long-polls Drydock (answered as soon as the task changes, or after
    `long_poll_wait` seconds) and looks again at once after a change, up to FOLLOW_LOOKS
    times, reporting each change as live progress (so a task's last steps and its end are
    seen without an engine round in between). A Drydock without long-polls, or one too busy
    to hold this one, is polled FIRST_POLL s after the task's creation, then every tenth of
    its age, at most every `interval` s: a task's end is seen at most 0.5 s or 10 % of its
    duration late, and a long task is polled at `interval` after its first minutes."""
    svc = services(ctx)
    rc = ctx.request_context()
    task_id = ctx.memo.get("task_id")
    if task_id is None:
        # the node's failure-domain slots this action holds (actions.budget): the task acts
        # under them instead of taking its own
        held = ctx.output("take_budget_slot") if ctx.node is not None else {}
        task = svc.drydock.create_task(action, str(design(ctx)["design_ref"]), node_filter,
                                       options, ctx=rc, key=ctx.key(),
                                       budget_holder=str(held["holder"])
                                       if held.get("domains") else None)
        task_id = str(task.get("task_id"))
        return retry_after(0, memo={"task_id": task_id, "created_at": ctx.now},
                           details={"task": task},
                           note=f"Drydock {action} task {task_id} created")
    since = ctx.memo.get("version")
    created_at = as_float(ctx.memo.get("created_at"), ctx.now)
    for _ in range(FOLLOW_LOOKS):
        watch = svc.drydock.watch_task(str(task_id), since=None if since is None else str(since),
                                       wait=svc.settings.long_poll_wait, ctx=rc)
        task = watch.task
        if str(task.get("status", "")) in FINISHED:
            break
        if watch.version is None or watch.busy or svc.settings.long_poll_wait <= 0:
            # a Drydock without long-polls, or too busy to hold one: poll, sooner while
            # the task is young
            delay = backoff_delay(interval, ctx.now - created_at, first=FIRST_POLL,
                                  fraction=POLL_FRACTION)
            return retry_after(delay, memo={"version": watch.version,
                                            "created_at": created_at},
                               details={"task": task})
        if watch.version == since:  # a whole wait without a change: the engine takes over
            break
        # a change: shown as the step's live progress, then the next look at once
        since = watch.version
        ctx.report({"task": task})
    else:
        watch = None
    status = str(task.get("status", ""))
    if watch is None or status not in FINISHED:
        # the next attempt waits in Drydock until the task changes (no sleep here)
        return retry_after(0, memo={"version": since}, details={"task": task})
    result = task.get("result")
    outcome = str(result.get("status") if isinstance(result, dict) else result or "")
    details = {"task": task, "tree": _tree(svc, str(task_id), rc)}
    if outcome == ResultStatus.SUCCESS:
        return done({"task_id": task_id}, details=details,
                    note=f"Drydock {action} task {task_id} succeeded")
    task = _with_errors(svc, str(task_id), task, rc)
    details["task"] = task
    causes = task_errors(task)
    return failed("DrydockTaskFailed", f"Drydock {action} task {task_id} ended {status} "
                  f"with result {outcome or 'unknown'}" + (f": {causes}" if causes else ""),
                  details)


def task_errors(task: Mapping[str, Any], limit: int = 3) -> str:
    """The first errors Drydock reported for the task's nodes, in its own words."""
    found: list[str] = []
    for sub in (task.get("subtask_errors") or {}).values():
        for m in ((sub or {}).get("details") or {}).get("messageList") or []:
            text = str(m.get("message") or "")
            node = m.get("node")
            found.append(f"{node}: {text}" if node and not text.startswith(str(node)) else text)
    more = f" (+{len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def _with_errors(svc: Services, task_id: str, task: Any, rc: RequestContext) -> Any:
    """The ended task with its subtasks' errors (the follow's answers leave them out), read
    once; as followed when Drydock cannot be read now."""
    try:
        return svc.drydock.get_task(task_id, ctx=rc)
    except BerthError:
        return task


def terminate_task(ctx: StepContext) -> None:
    """Stop or timeout: the step's Drydock task (if one was created) stops at a safe point."""
    task_id = ctx.memo.get("task_id")
    if task_id is not None:
        services(ctx).drydock.terminate_task(str(task_id), ctx=ctx.request_context())


def _tree(svc: Services, task_id: str, rc: RequestContext) -> dict[str, object]:
    """The finished task's whole tree, for the operator; its absence is not an error."""
    try:
        return svc.drydock.task_tree(task_id, ctx=rc)
    except BerthError as exc:
        return {"error": exc.message}


def intermediate_commits(ctx: StepContext) -> Outcome:
    """Refuse when other committed revisions await a site action (unless allowed)."""
    svc = services(ctx)
    revision = as_int(ctx.output("preflight")["revision_id"])
    if ctx.parameters.get("allow-intermediate-commits") is True:
        LOG.info("Intermediate commit check skipped for action %s", ctx.action_id)
        return done(note="Intermediate commit check skipped: allow-intermediate-commits=true")
    others = svc.documents.intermediate_commits(revision)
    if others:
        return failed("IntermediateCommits",
                      f"Committed revisions {others} were never used by a site action; "
                      "use allow-intermediate-commits=true to go on", {"revisions": others})
    return done(note="No intermediate commits")


def tag_site_action(ctx: FinishContext) -> None:
    """Tag the revision used site-action-success/failure (failure once validation passed)."""
    revision = ctx.revision_id or (ctx.outputs.get("preflight") or {}).get("revision_id")
    if revision is None:
        return
    validated = (ctx.step_states.get("resolve_design") == StepState.SUCCESS
                 and ctx.step_states.get("validate_design", StepState.SUCCESS)
                 == StepState.SUCCESS)
    if not ctx.succeeded and not validated:
        return  # site-action-failure only once document validation passed (spec)
    tag = "site-action-success" if ctx.succeeded else "site-action-failure"
    services(ctx).documents.add_tag(as_int(revision), tag, {"dag_id": ctx.action_id})
