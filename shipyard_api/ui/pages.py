"""The web view's pages as HTML: layout, sign-in, site, actions, one action, plans.

Pure functions of the data they are given (no I/O, no falcon); every value goes through the
escaping builder of `html.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlencode

from shipyard_api.ui.action_page import action_page, duration, live_section
from shipyard_api.ui.fields import entries
from shipyard_api.ui.html import Child, Html, tag
from shipyard_api.ui.layout import badge, layout, problems, state
from shipyard_api.ui.plan_page import plan_page, plan_targets
from shipyard_api.ui.site_page import site_filters, site_page
from shipyard_api.workflow.states import ActionState as A

__all__ = ["action_page", "actions_page", "duration", "error_page", "layout", "live_section",
           "login_location", "login_page", "next_url", "plan_page", "plans_page", "problems",
           "site_filters", "site_page", "state"]


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


# -- actions -------------------------------------------------------------------------
def action_link(action: Mapping[str, object]) -> Html:
    return tag("a", action.get("id"), href=f"/ui/actions/{quote(str(action.get('id')))}")


def actions_page(actions: Sequence[Mapping[str, object]], user: str | None) -> Html:
    newest = sorted(actions, key=lambda a: str(a.get("datetime") or ""), reverse=True)
    running = any(a.get("state") in (A.PENDING, A.RUNNING, A.STOPPING) for a in actions)
    body: list[Child] = [tag("h1", "Actions")]
    if not actions:
        body.append(tag("p", "No actions yet.", class_="empty"))
    else:
        body.append(tag("table", tag("tr", [tag("th", h, scope="col") for h in (
            "Action", "Name", "State", "Targets", "Created", "User", "Message")]), [
            tag("tr", tag("td", action_link(a)), tag("td", a.get("name")),
                tag("td", state(a.get("state"))),
                tag("td", ", ".join(str(n) for n in entries(a.get("target_nodes")))
                    or ("site" if a.get("site_wide") else "")),
                tag("td", a.get("datetime")), tag("td", a.get("user")),
                tag("td", a.get("message") or a.get("reason"))) for a in newest],
            class_="actions"))
    return layout("Actions", body, user=user, refresh=5 if running else None)


# -- plans ---------------------------------------------------------------------------
def plan_link(plan: Mapping[str, object]) -> Html:
    pid = str(plan.get("id") or "")
    return tag("a", pid, href=f"/ui/plans/{quote(pid)}")


def plans_page(plans: Sequence[Mapping[str, object]], user: str | None) -> Html:
    body: list[Child] = [tag("h1", "Plans")]
    if not plans:
        body.append(tag("p", "No plans yet. Make one with shipyard plan ACTION --param ...",
                        class_="empty"))
    else:
        body.append(tag("table", tag("tr", [tag("th", h, scope="col") for h in (
            "Plan", "Action", "Targets", "Verdict", "Blockers", "Warnings", "Created",
            "Expires")]), [
            tag("tr", tag("td", plan_link(p)), tag("td", p.get("action")),
                tag("td", plan_targets(p)),
                tag("td", badge(p.get("verdict"))),
                tag("td", len(entries(p.get("blockers")))),
                tag("td", len(entries(p.get("warnings")))),
                tag("td", p.get("created")),
                tag("td", "expired" if p.get("expired") else p.get("expires")),
                data_plan=p.get("id")) for p in plans],
            class_="plans"))
    return layout("Plans", body, user=user)


def next_url(value: object) -> str:
    """Where to go after signing in: a path under /ui only (never another site)."""
    text = str(value or "")
    if (text.startswith("/ui") and "\\" not in text and text.isascii()
            and text.isprintable() and " " not in text):
        return text
    return "/ui/site"


def login_location(path: str, query: str) -> str:
    target = path + (f"?{query}" if query else "")
    return "/ui/login?" + urlencode({"next": target})
