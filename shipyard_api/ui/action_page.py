"""An action as an operator follows it: what blocks it now (the PDB, lock or etcd cluster),
progress per node as a timeline of its steps, the deployment groups, and each step's log.

`live_section` is the part that changes; the page embeds it and `live.js` swaps in a fresh
copy from /ui/actions/{id}/live whenever the action's version moves (no reload).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from urllib.parse import quote

from shipyard_api.actions.progress import progress_lines, step_state
from shipyard_api.ui.blockers import Finding, classify
from shipyard_api.ui.fields import entries, fields, mappings, number, text
from shipyard_api.ui.graph import group_graph
from shipyard_api.ui.html import Child, Html, join, tag
from shipyard_api.ui.layout import layout, state, tone
from shipyard_api.ui.plan_page import reason_groups
from shipyard_api.workflow.states import ActionState as A
from shipyard_api.workflow.states import StepState as S

ENDED = (A.COMPLETE, A.FAILED, A.STOPPED)
QUIET = ("terminating", "waiting to be evicted", "eviction hold")  # drain groups, no blocker


def parse_time(value: object) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def duration(step: Mapping[str, object], now: dt.datetime) -> str:
    start = parse_time(step.get("start"))
    if start is None:
        return ""
    end = parse_time(step.get("end")) or now
    seconds = max(0, int((end - start).total_seconds()))
    text = f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
    return text if step.get("end") else f"{text} so far"


def clock(value: object) -> Html | str:
    """A time as HH:MM:SS (UTC), the full timestamp in its datetime attribute."""
    when = parse_time(value)
    if when is None:
        return ""
    return tag("time", when.strftime("%H:%M:%S"), datetime=str(value), title=str(value))


def details_of(step: Mapping[str, object]) -> Mapping[str, object]:
    details = step.get("details")
    return details if isinstance(details, Mapping) else {}


def task_tree(tree: object) -> Html:
    """Drydock's task tree (layers=-1 view): each task, its node or step, status, result."""
    if not isinstance(tree, Mapping) or "init_task_id" not in tree:
        return Html("")

    def item(task_id: str, depth: int) -> Html:
        task = tree.get(task_id)
        if not isinstance(task, Mapping) or depth > 8:
            return Html("")
        result = task.get("result")
        result = result if isinstance(result, Mapping) else {}
        label = " ".join(str(p) for p in (
            task.get("action"), task.get("node") or "", task.get("step") or "") if p)
        kids = [item(str(s), depth + 1) for s in task.get("subtask_id_list") or []]
        return tag("li", tag("span", label), ": ", state(task.get("status")),
                   f" ({result.get('status')})" if result.get("status") else "",
                   tag("ul", kids, class_="tree") if any(kids) else None)

    return tag("details", tag("summary", "Drydock task tree"),
               tag("ul", item(str(tree["init_task_id"]), 0), class_="tree"))


def step_detail(step: Mapping[str, object]) -> Html:
    details = details_of(step)
    parts: list[Child] = []
    lines = progress_lines(step)
    if lines:
        parts.append(tag("ul", [tag("li", line) for line in lines], class_="progress"))
    if details.get("message"):
        parts.append(tag("div", details["message"], class_="bad"))
    tree = details.get("tree")
    if tree:
        parts.append(task_tree(tree))
    elif isinstance(task := details.get("task"), Mapping):
        parts.append(tag("div", f"Drydock task {task.get('task_id')}: {task.get('status')}",
                         class_="progress"))
    return join(parts)


def step_log(step: Mapping[str, object]) -> Html:
    """The step's notes, oldest first, with their times."""
    notes = mappings(step.get("notes"))
    if not notes:
        return tag("span", "no log lines", class_="muted small")
    return tag("details", tag("summary", f"Log ({len(notes)})"),
               tag("ol", [tag("li", clock(n.get("at")), n.get("message")) for n in notes],
                   class_="log"),
               id=f"log-{step.get('id')}", open=step_state(step) == S.FAILED)


def blocking(steps: list[Mapping[str, object]]) -> list[Finding]:
    """What holds the action now: the pods a running drain cannot evict (grouped by the
    budget or lock that refuses them), and why a waiting or failed step is waiting or failed."""
    out = []
    for s in steps:
        node = str(s["node"]) if s.get("node") else None
        st = step_state(s)
        if st in (S.RUNNING, S.WAITING):
            drain = details_of(s).get("drain")
            for g in (drain.get("groups") or []) if isinstance(drain, Mapping) else []:
                reason = str(g.get("reason") or "") if isinstance(g, Mapping) else ""
                if reason and not reason.startswith(QUIET):
                    count = int(g.get("count") or 0)
                    out.append(classify(f"{reason}: {count} pod{'s' if count != 1 else ''}",
                                        node, text(s.get("id"))))
        if st in (S.WAITING, S.FAILED):
            notes = entries(s.get("notes"))
            why = s.get("reason") or details_of(s).get("message") or (
                notes[-1].get("message") if notes and isinstance(notes[-1], Mapping) else "")
            if why:
                out.append(classify(f"{s.get('id')} {st}: {why}", node, text(s.get("id"))))
    return out


def by_node(steps: list[Mapping[str, object]]) -> list[tuple[str, list[Mapping[str, object]]]]:
    """Steps per node in their order; the action-wide steps first, as "action"."""
    rows: dict[str, list[Mapping[str, object]]] = {}
    for s in sorted(steps, key=lambda s: number(s.get("index"))):
        rows.setdefault(str(s.get("node") or ""), []).append(s)
    return [(k or "action", v) for k, v in sorted(rows.items(), key=lambda kv: kv[0] != "")]


def node_progress(steps: list[Mapping[str, object]]) -> Html:
    rows = []
    for node, mine in by_node(steps):
        done = sum(1 for s in mine if step_state(s) in (S.SUCCESS, S.SKIPPED))
        now = next((s for s in mine if step_state(s) in (S.RUNNING, S.WAITING, S.FAILED)),
                   None)
        chips = [tag("li", tag("span", s.get("name"), " ", tag("small", step_state(s)),
                               class_=f"chip badge-chip tone-{tone(step_state(s))} "
                                      f"{step_state(s)}",
                               data_step=s.get("id"), data_state=step_state(s)))
                 for s in mine]
        current = [tag("div", tag("strong", now.get("name")), ": ", state(step_state(now)),
                       tag("ul", [tag("li", x) for x in progress_lines(now)],
                           class_="progress") if progress_lines(now) else None)
                   ] if now else tag("span", "—", class_="muted")
        rows.append(tag("tr", tag("th", node, scope="row"),
                        tag("td", f"{done} of {len(mine)}"),
                        tag("td", tag("ol", chips, class_="timeline",
                                      aria_label=f"steps of {node}"), class_="tl"),
                        tag("td", current), data_node=node))
    return tag("table", tag("tr", [tag("th", h, scope="col") for h in (
        "Node", "Done", "Steps", "Now")]), rows, class_="nodes-progress")


def groups_of(action: Mapping[str, object]) -> list[Mapping[str, object]]:
    for step in mappings(action.get("steps")):
        details = details_of(step)
        if step.get("name") == "baremetal" and isinstance(details.get("groups"), list):
            return [g for g in mappings(details["groups"]) if "name" in g]
    return []


def steps_table(steps: list[Mapping[str, object]], now: dt.datetime) -> Html:
    return tag("table", tag("tr", [tag("th", h, scope="col") for h in (
        "Step", "Node", "State", "Started", "Duration", "Attempts", "Reason", "Detail",
        "Log")]), [
        tag("tr", tag("td", s.get("name")), tag("td", s.get("node") or ""),
            tag("td", state(step_state(s))), tag("td", clock(s.get("start"))),
            tag("td", duration(s, now)), tag("td", s.get("attempts")),
            tag("td", s.get("reason") or ""), tag("td", step_detail(s)),
            tag("td", step_log(s)), data_step=s.get("id"), data_state=step_state(s))
        for s in steps], class_="steps")


def live_section(action: Mapping[str, object], now: dt.datetime | None = None) -> Html:
    """Everything on the action page that changes while it runs."""
    now = now or dt.datetime.now(dt.UTC)
    steps = mappings(action.get("steps"))
    done = sum(1 for s in steps if step_state(s) in (S.SUCCESS, S.SKIPPED))
    ended = action.get("state") in ENDED
    body: list[Child] = [
        tag("p", "State: ", state(action.get("state")),
            f" — {action.get('message')}" if action.get("message") else "",
            f" · {done} of {len(steps)} steps done", class_="summary",
            data_action_state=action.get("state"), data_ended=ended or None)]
    holds = blocking(steps)
    if holds:
        body += [tag("h2", f"Blocking now ({len(holds)})"), reason_groups(holds, "blocker")]
    body += [tag("h2", "Progress per node"), node_progress(steps)]
    groups = groups_of(action)
    if groups:
        body += [tag("h2", "Deployment groups"), group_graph(groups)]
    body += [tag("h2", "Steps and logs"), steps_table(steps, now)]
    return join(body)


def action_page(action: Mapping[str, object], user: str | None, now: dt.datetime | None = None,
                version: object = None) -> Html:
    live = action.get("state") not in ENDED
    aid = str(action.get("id"))
    params = ", ".join(f"{k}={v}" for k, v in fields(action.get("parameters")).items())
    body: list[Child] = [
        tag("h1", f"{action.get('name')} ", tag("small", aid)),
        tag("p", f"Parameters: {params or 'none'}", tag("br"),
            f"Created {action.get('datetime')} by {action.get('user')}; design revision "
            f"{action.get('revision_id')}; context marker {action.get('context_marker')}",
            class_="muted"),
        tag("p", "Updates as the action runs." if live else "The action has ended.",
            id="live-status", class_="live-status", role="status", aria_live="polite"),
        tag("div", live_section(action, now), id="live",
            data_live=f"/ui/actions/{quote(aid)}/live" if live else None,
            data_version=None if version is None else str(version))]
    return layout(f"Action {aid}", body, user=user, fallback_refresh=5 if live else None,
                  scripts=("live.js",) if live else ())
