"""The web view's pages as HTML: layout, sign-in, site, actions, one action, plans.

Pure functions of the data they are given (no I/O, no falcon); every value goes through the
escaping builder of `html.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from shipyard_api.actions.progress import progress_lines
from shipyard_api.ui.graph import group_graph
from shipyard_api.ui.html import Html, join, tag
from shipyard_api.ui.site import FILTERS, SiteFacts, matches
from shipyard_api.workflow.states import ActionState as A

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f3a5f;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}header .who{margin-left:auto}
header form{display:inline}header button{font-size:12px}
main{padding:12px 16px}table{border-collapse:collapse;background:#fff;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}.state-success,.state-complete,.ok{color:#1b7a1b}
.state-failed,.bad,.blocker{color:#b22}.state-running,.state-waiting{color:#1f5fbf}
.state-pending,.state-skipped{color:#777}.problems{background:#fff3cd;padding:6px 10px}
ul.tree{margin:0;padding-left:16px}.progress{color:#555;font-size:12px;margin:2px 0 0}
form.filters input,form.filters select{margin-right:6px}
.muted{color:#777}h2{margin:12px 0 4px}
"""
STEP_STATES = ("pending", "running", "waiting", "success", "failed", "skipped")


def layout(title: str, body: Any, *, user: str | None = None,
           refresh: int | None = None) -> Html:
    nav = tag("header", tag("span", "Berth"),
              tag("a", "Site", href="/ui/site"), tag("a", "Actions", href="/ui/actions"),
              tag("a", "Plans", href="/ui/plans"),
              tag("span", tag("span", user or ""), " ",
                  tag("form", tag("button", "Sign out", type="submit"), method="post",
                      action="/ui/logout"), class_="who") if user else None)
    head = tag("head", tag("meta", charset="utf-8"),
               tag("meta", http_equiv="refresh", content=str(refresh)) if refresh else None,
               tag("title", f"{title} · Berth"), tag("style", Html(STYLE)))
    return Html("<!DOCTYPE html>" + tag("html", head, tag("body", nav, tag("main", body)),
                                         lang="en"))


def login_page(message: str = "", next_url: str = "/ui/site") -> Html:
    form = tag("form",
               tag("p", tag("label", "Token (Keystone or Berth) ",
                            tag("input", type="password", name="token", autocomplete="off",
                                required=True, autofocus=True))),
               tag("input", type="hidden", name="next", value=next_url),
               tag("button", "Sign in", type="submit"), method="post", action="/ui/login")
    return layout("Sign in", [tag("h1", "Sign in"),
                              tag("p", message, class_="bad") if message else None, form])


def error_page(code: int, message: str, user: str | None = None) -> Html:
    return layout(f"Error {code}", [tag("h1", f"Error {code}"), tag("p", message)], user=user)


def state(value: Any) -> Html:
    return tag("span", value, class_=f"state-{value}")


def problems(items: Sequence[str]) -> Html:
    if not items:
        return Html("")
    return tag("div", tag("ul", [tag("li", p) for p in items]), class_="problems")


# -- site ----------------------------------------------------------------------------
SITE_COLUMNS = (("Node", "name"), ("Power", "power"), ("MAAS", "maas"),
                ("K8s Ready", "ready"), ("Cordoned", "cordoned"), ("etcd member", "etcd"),
                ("Retired", "retired"), ("Reboot requests", "reboot"))
FILTER_CHOICES = {"power": ("on", "off", "unknown"), "ready": ("yes", "no", "absent"),
                  "cordoned": ("yes", "no"), "etcd": ("yes", "no"), "retired": ("yes", "no")}


def filter_form(facts: SiteFacts, filters: Mapping[str, str]) -> Html:
    def select(name: str, choices: Sequence[str]) -> Html:
        return tag("label", f"{name} ", tag("select", tag("option", "any", value=""),
                                            [tag("option", c, value=c,
                                                 selected=filters.get(name) == c)
                                             for c in choices], name=name))
    maas = sorted({str(n["maas"]) for n in facts.nodes})
    return tag("form",
               tag("label", "name ", tag("input", name="q", value=filters.get("q", ""))),
               select("rack", facts.racks), select("maas", maas),
               [select(k, v) for k, v in FILTER_CHOICES.items()],
               tag("button", "Filter", type="submit"), " ",
               tag("a", "clear", href="/ui/site"), method="get", action="/ui/site",
               class_="filters")


def node_cell(row: Mapping[str, Any], key: str) -> Any:
    value = row.get(key)
    if key == "power" and row.get("power_error"):
        return [value, tag("div", row["power_error"], class_="progress")]
    if key == "retired" and row.get("retired_reason"):
        return [value, tag("div", row["retired_reason"], class_="progress")]
    return value


def site_page(facts: SiteFacts, filters: Mapping[str, str], user: str | None) -> Html:
    rows = [n for n in facts.nodes if matches(n, filters)]
    body: list[Any] = [tag("h1", "Site"),
                       tag("p", f"Committed design revision {facts.revision}"
                           if facts.revision else "No committed design revision",
                           class_="muted"),
                       problems(facts.problems), filter_form(facts, filters)]
    if not facts.nodes:
        body.append(tag("p", "No nodes.", class_="empty"))
    elif not rows:
        body.append(tag("p", "No node matches the filter.", class_="empty"))
    for rack in sorted({str(r["rack"]) for r in rows}):
        racked = [r for r in rows if str(r["rack"]) == rack]
        body += [tag("h2", f"Rack {rack}" if rack else "No rack"), tag(
            "table", tag("tr", [tag("th", h) for h, _ in SITE_COLUMNS]),
            [tag("tr", [tag("td", node_cell(r, k)) for _, k in SITE_COLUMNS],
                 data_node=r["name"]) for r in racked], class_="nodes")]
    return layout("Site", body, user=user)


def site_filters(params: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(params[k]) for k in FILTERS if isinstance(params.get(k), str)}


# -- actions -------------------------------------------------------------------------
def action_link(action: Mapping[str, Any]) -> Html:
    return tag("a", action.get("id"), href=f"/ui/actions/{quote(str(action.get('id')))}")


def actions_page(actions: Sequence[Mapping[str, Any]], user: str | None) -> Html:
    newest = sorted(actions, key=lambda a: str(a.get("datetime") or ""), reverse=True)
    running = any(a.get("state") in (A.PENDING, A.RUNNING, A.STOPPING) for a in actions)
    body: list[Any] = [tag("h1", "Actions")]
    if not actions:
        body.append(tag("p", "No actions yet.", class_="empty"))
    else:
        body.append(tag("table", tag("tr", [tag("th", h) for h in (
            "Action", "Name", "State", "Targets", "Created", "User", "Message")]), [
            tag("tr", tag("td", action_link(a)), tag("td", a.get("name")),
                tag("td", state(a.get("state"))),
                tag("td", ", ".join(str(n) for n in a.get("target_nodes") or [])
                    or ("site" if a.get("site_wide") else "")),
                tag("td", a.get("datetime")), tag("td", a.get("user")),
                tag("td", a.get("message") or a.get("reason"))) for a in newest],
            class_="actions"))
    return layout("Actions", body, user=user, refresh=5 if running else None)


def parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def duration(step: Mapping[str, Any], now: dt.datetime) -> str:
    start = parse_time(step.get("start"))
    if start is None:
        return ""
    end = parse_time(step.get("end")) or now
    seconds = max(0, int((end - start).total_seconds()))
    text = f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
    return text if step.get("end") else f"{text} so far"


def task_tree(tree: Any) -> Html:
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


def details_of(step: Mapping[str, Any]) -> Mapping[str, Any]:
    details = step.get("details")
    return details if isinstance(details, Mapping) else {}


def step_detail(step: Mapping[str, Any]) -> Html:
    details = details_of(step)
    notes = step.get("notes") or []
    parts: list[Any] = []
    if notes:
        parts.append(tag("div", notes[-1].get("message")))
    lines = progress_lines(step)
    if lines:
        parts.append(tag("ul", [tag("li", line) for line in lines], class_="progress"))
    if details.get("message"):
        parts.append(tag("div", details["message"], class_="bad"))
    tree = details.get("tree")
    if tree:
        parts.append(task_tree(tree))
    elif isinstance(details.get("task"), Mapping):
        task = details["task"]
        parts.append(tag("div", f"Drydock task {task.get('task_id')}: {task.get('status')}",
                         class_="progress"))
    return join(parts)


def groups_of(action: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    for step in action.get("steps") or []:
        details = details_of(step)
        if step.get("name") == "baremetal" and isinstance(details.get("groups"), list):
            return [g for g in details["groups"] if isinstance(g, Mapping) and "name" in g]
    return []


def action_page(action: Mapping[str, Any], user: str | None,
                now: dt.datetime | None = None) -> Html:
    now = now or dt.datetime.now(dt.UTC)
    live = action.get("state") in (A.PENDING, A.RUNNING, A.PAUSED, A.STOPPING)
    params = ", ".join(f"{k}={v}" for k, v in (action.get("parameters") or {}).items())
    body: list[Any] = [
        tag("h1", f"{action.get('name')} ", tag("small", action.get("id"))),
        tag("p", "State: ", state(action.get("state")),
            f" — {action.get('message')}" if action.get("message") else "",
            tag("br"), f"Parameters: {params}", tag("br"),
            f"Created {action.get('datetime')} by {action.get('user')}; "
            f"design revision {action.get('revision_id')}; context marker "
            f"{action.get('context_marker')}", class_="summary",
            data_action_state=action.get("state"))]
    groups = groups_of(action)
    if groups:
        body += [tag("h2", "Deployment groups"), group_graph(groups)]
    steps = action.get("steps") or []
    body.append(tag("h2", "Steps"))
    body.append(tag("table", tag("tr", [tag("th", h) for h in (
        "Step", "Node", "State", "Started", "Duration", "Attempts", "Reason", "Detail")]), [
        tag("tr", tag("td", s.get("name")), tag("td", s.get("node") or ""),
            tag("td", state(s.get("state"))), tag("td", s.get("start") or ""),
            tag("td", duration(s, now)), tag("td", s.get("attempts")),
            tag("td", s.get("reason") or ""), tag("td", step_detail(s)),
            data_step=s.get("id"), data_state=s.get("state")) for s in steps],
        class_="steps"))
    return layout(f"Action {action.get('id')}", body, user=user, refresh=3 if live else None)


# -- plans ---------------------------------------------------------------------------
def plan_link(plan: Mapping[str, Any]) -> Html:
    pid = str(plan.get("id") or "")
    return tag("a", pid, href=f"/ui/plans/{quote(pid)}")


def plan_targets(plan: Mapping[str, Any]) -> str:
    targets = (plan.get("parameters") or {}).get("target_nodes") or []
    return ", ".join(str(n) for n in targets) if targets else "site"


def messages(items: Any) -> list[str]:
    out = []
    for item in items or []:
        if isinstance(item, Mapping):
            text = str(item.get("message") or "")
            node, source = item.get("node"), item.get("source")
            text = f"{node}: {text}" if node and str(node) not in text else text
            out.append(f"{text} [{source}]" if source else text)
        else:
            out.append(str(item))
    return out


def plans_page(plans: Sequence[Mapping[str, Any]], user: str | None) -> Html:
    body: list[Any] = [tag("h1", "Plans")]
    if not plans:
        body.append(tag("p", "No plans yet. Make one with shipyard plan ACTION --param ...",
                        class_="empty"))
    else:
        body.append(tag("table", tag("tr", [tag("th", h) for h in (
            "Plan", "Action", "Targets", "Verdict", "Blockers", "Warnings", "Created",
            "Expires")]), [
            tag("tr", tag("td", plan_link(p)), tag("td", p.get("action")),
                tag("td", plan_targets(p)),
                tag("td", p.get("verdict"),
                    class_="blocker" if p.get("blockers") else "ok"),
                tag("td", len(p.get("blockers") or [])), tag("td", len(p.get("warnings") or [])),
                tag("td", p.get("created")),
                tag("td", "expired" if p.get("expired") else p.get("expires")),
                data_plan=p.get("id")) for p in plans],
            class_="plans"))
    return layout("Plans", body, user=user)


def facts_table(data: Mapping[str, Any]) -> Html:
    """Facts of a plan section as a key/value table (nested values as nested tables)."""
    rows = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            shown: Any = facts_table(value) if value else ""
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            shown = [facts_table(v) for v in value]
        elif isinstance(value, list):
            shown = ", ".join(str(v) for v in value)
        else:
            shown = value
        rows.append(tag("tr", tag("th", key), tag("td", shown)))
    return tag("table", rows, class_="facts")


def calls_table(calls: Sequence[Any]) -> Html:
    rows = [c for c in calls if isinstance(c, Mapping)]
    return tag("table", tag("tr", [tag("th", h) for h in (
        "Step", "Node", "Service", "Request", "Why")]), [
        tag("tr", tag("td", c.get("step") or ""), tag("td", c.get("node") or ""),
            tag("td", c.get("service")), tag("td", tag("code", c.get("request"))),
            tag("td", c.get("why"))) for c in rows], class_="calls")


def plan_page(plan: Mapping[str, Any], user: str | None) -> Html:
    blockers, warnings = messages(plan.get("blockers")), messages(plan.get("warnings"))
    verdict = "would be refused" if blockers else "would run"
    body: list[Any] = [
        tag("h1", f"Plan {plan.get('id')}"),
        tag("p", f"{plan.get('action')} on {plan_targets(plan)}: {verdict}",
            class_="blocker" if blockers else "ok", data_verdict=plan.get("verdict")),
        tag("p", f"Design revision {plan.get('revision_id')}; created {plan.get('created')} "
                 f"by {plan.get('user')}; "
                 + ("expired" if plan.get("expired") else f"expires {plan.get('expires')}"),
            class_="muted"),
        tag("h2", f"Blockers ({len(blockers)})"),
        tag("ul", [tag("li", b, class_="blocker") for b in blockers], class_="blockers")
        if blockers else tag("p", "None.", class_="muted"),
        tag("h2", f"Warnings ({len(warnings)})"),
        tag("ul", [tag("li", w) for w in warnings], class_="warnings") if warnings
        else tag("p", "None.", class_="muted")]
    groups = [g for g in plan.get("groups") or [] if isinstance(g, Mapping) and "name" in g]
    if groups:
        body += [tag("h2", "Deployment groups"), group_graph(groups)]
    nodes = [n for n in plan.get("nodes") or [] if isinstance(n, Mapping)]
    for node in nodes:
        body += [tag("h2", f"Node {node.get('node')}"),
                 facts_table({k: v for k, v in node.items() if k != "node"})]
    if plan.get("calls"):
        body += [tag("h2", "What would be called"), calls_table(plan["calls"])]
    if plan.get("facts"):
        body.append(tag("details", tag("summary", "Facts the steps re-check"),
                        [facts_table(f) for f in plan["facts"] if isinstance(f, Mapping)]))
    return layout(f"Plan {plan.get('id')}", body, user=user)


def next_url(value: Any) -> str:
    """Where to go after signing in: a path under /ui only (never another site)."""
    text = str(value or "")
    if (text.startswith("/ui") and "\\" not in text and text.isascii()
            and text.isprintable() and " " not in text):
        return text
    return "/ui/site"


def login_location(path: str, query: str) -> str:
    target = path + (f"?{query}" if query else "")
    return "/ui/login?" + urlencode({"next": target})
