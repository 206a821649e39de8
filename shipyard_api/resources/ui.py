"""Routes of the read-only web view (/ui): sign-in with a token kept in a cookie, then the
site, actions and plans pages. Thin: they check policy, ask the domain, render `ui.pages`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import falcon

from common.errors import BerthError
from common.longpoll import wait_params
from shipyard_api.ui import pages
from shipyard_api.ui.actions import ActionPages
from shipyard_api.ui.html import Html
from shipyard_api.ui.site import SiteView

COOKIE = "berth_token"
MAX_TOKEN = 8192
# Only Shipyard itself: its own style sheet and script (no inline code), fetches back here.
CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; "
       "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
STATIC = Path(pages.__file__).resolve().parent / "static"
STATIC_TYPES = {"berth.css": "text/css; charset=utf-8",
                "live.js": "text/javascript; charset=utf-8"}


class PlansPort(Protocol):
    def list(self) -> list[dict[str, object]]: ...

    def get(self, plan_id: str) -> dict[str, object]: ...


def send(resp: falcon.Response, page: Html, code: int = 200) -> None:
    """A page (or, for the live action page, a part of one) with the headers of the view."""
    resp.status = falcon.code_to_http_status(code)
    resp.content_type = "text/html; charset=utf-8"
    resp.text = str(page)
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("Content-Security-Policy", CSP)
    resp.set_header("X-Frame-Options", "DENY")
    resp.set_header("X-Content-Type-Options", "nosniff")
    resp.set_header("Referrer-Policy", "same-origin")  # (no-referrer makes Origin null)


class _Page(Protocol):
    rule: str  # the policy rule of a page whose decorator names none


def signed_in(rule: str | None = None
              ) -> Callable[[Callable[..., Html]], Callable[..., None]]:
    """Render the page for a caller allowed by `rule` (else the resource's `rule`): 401 with
    the sign-in form when not authenticated, 403 when the policy denies it, a peer's error
    as an error page."""
    def wrap(fn: Callable[..., Html]) -> Callable[..., None]:
        @functools.wraps(fn)
        def on_get(self: _Page, req: falcon.Request, resp: falcon.Response,
                   **kw: str) -> None:
            name = rule or str(self.rule)
            ctx = req.context.berth
            if not ctx.authenticated:
                note = "Your token was not accepted; sign in again." \
                    if req.get_header("X-Auth-Token") else ""
                send(resp, pages.login_page(note, pages.next_url(req.relative_uri)), 401)
                return
            if not req.context.policy.allows(name, ctx.user, ctx.roles):
                send(resp, pages.error_page(403, f"Policy {name} does not allow {ctx.user} "
                                                 "to see this page", ctx.user), 403)
                return
            try:
                send(resp, fn(self, req, ctx.user, **kw))
                for header, value in getattr(req.context, "ui_headers", {}).items():
                    resp.set_header(header, value)
            except BerthError as exc:
                send(resp, pages.error_page(exc.code, exc.message, ctx.user), exc.code)
        return on_get
    return wrap


def same_origin(req: falcon.Request) -> bool:
    """A form posted from a page of this very host (browsers send Origin on POST)."""
    origin = req.get_header("Origin")
    return origin is None or urlsplit(origin).netloc == (req.get_header("Host") or "")


class UiRootResource:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        raise falcon.HTTPSeeOther("/ui/site")


class LoginResource:
    """GET: the form. POST: keep the token in an HttpOnly, SameSite=Strict cookie for /ui."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send(resp, pages.login_page("", pages.next_url(req.get_param("next"))))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not same_origin(req):
            send(resp, pages.error_page(403, "Sign-in from another site refused"), 403)
            return
        form = req.get_media() if req.content_type and \
            req.content_type.startswith("application/x-www-form-urlencoded") else {}
        token = str((form or {}).get("token") or "").strip()
        target = pages.next_url((form or {}).get("next"))
        if not token or len(token) > MAX_TOKEN or not (token.isascii() and token.isprintable()):
            send(resp, pages.login_page("Enter a token.", target), 400)
            return
        resp.set_cookie(COOKIE, token, path="/ui", http_only=True, same_site="Strict",
                        secure=req.forwarded_scheme == "https")  # behind a TLS proxy too
        raise falcon.HTTPSeeOther(target)


class LogoutResource:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.unset_cookie(COOKIE, path="/ui", same_site="Strict")
        raise falcon.HTTPSeeOther("/ui/login")


class StaticResource:
    """The view's style sheet and script: public (the sign-in page needs them), fixed names."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        if name not in STATIC_TYPES:
            raise falcon.HTTPNotFound()
        resp.content_type = STATIC_TYPES[name]
        resp.text = (STATIC / name).read_text(encoding="utf-8")
        resp.set_header("Cache-Control", "no-cache")
        resp.set_header("X-Content-Type-Options", "nosniff")


class SitePage:
    def __init__(self, site: SiteView, actions: ActionPages | None = None) -> None:
        self._site, self._actions = site, actions

    @signed_in("shipyard:get_site_statuses")
    def on_get(self, req: falcon.Request, user: str) -> Html:
        facts = self._site.facts(req.context.berth)
        ctx = req.context
        shown = self._actions is not None and ctx.policy.allows(
            "shipyard:list_actions", ctx.berth.user, ctx.berth.roles)
        return pages.site_page(facts, pages.site_filters(req.params), user,
                               self._actions.list() if shown and self._actions else [])


class ActionsPage:
    def __init__(self, actions: ActionPages) -> None:
        self._actions = actions

    @signed_in("shipyard:list_actions")
    def on_get(self, req: falcon.Request, user: str) -> Html:
        return pages.actions_page(self._actions.list(), user)


class ActionPage:
    def __init__(self, actions: ActionPages) -> None:
        self._actions = actions

    @signed_in("shipyard:get_action")
    def on_get(self, req: falcon.Request, user: str, action_id: str) -> Html:
        version = self._actions.version(action_id)  # before the view: never older than it
        return pages.action_page(self._actions.get(action_id, req.context.berth), user,
                                 version=version)


class ActionLivePart:
    """The changing part of an action page; `?since=V&wait=S` answers once the action's
    version (header X-Action-Version) differs from V, or after S s, as the API's long-poll."""

    def __init__(self, actions: ActionPages) -> None:
        self._actions = actions

    @signed_in("shipyard:get_action")
    def on_get(self, req: falcon.Request, user: str, action_id: str) -> Html:
        wait, since = wait_params(req.get_param("wait"), req.get_param("since"), 60.0)
        version = self._actions.changed(action_id, since, wait)
        req.context.ui_headers = {"X-Action-Version": str(version)}
        return pages.live_section(self._actions.get(action_id, req.context.berth))


class PlansPage:
    def __init__(self, plans: PlansPort, rule: str) -> None:
        self._plans, self.rule = plans, rule

    @signed_in()
    def on_get(self, req: falcon.Request, user: str) -> Html:
        return pages.plans_page(self._plans.list(), user)


class PlanPage:
    def __init__(self, plans: PlansPort, rule: str) -> None:
        self._plans, self.rule = plans, rule

    @signed_in()
    def on_get(self, req: falcon.Request, user: str, plan_id: str) -> Html:
        return pages.plan_page(self._plans.get(plan_id), user)


def ui_routes(actions: ActionPages, site: SiteView, plans: PlansPort | None = None,
              plan_rule: str = "shipyard:get_plan") -> list[tuple[str, object]]:
    routes: list[tuple[str, object]] = [
        ("/ui", UiRootResource()), ("/ui/login", LoginResource()),
        ("/ui/logout", LogoutResource()), ("/ui/site", SitePage(site, actions)),
        ("/ui/static/{name}", StaticResource()),
        ("/ui/actions", ActionsPage(actions)),
        ("/ui/actions/{action_id}", ActionPage(actions)),
        ("/ui/actions/{action_id}/live", ActionLivePart(actions))]
    if plans is not None:
        routes += [("/ui/plans", PlansPage(plans, plan_rule)),
                   ("/ui/plans/{plan_id}", PlanPage(plans, plan_rule))]
    return routes


def token_from_cookie(header: str) -> str | None:
    try:
        jar: SimpleCookie = SimpleCookie(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


def cookie_auth(app: WSGIApplication) -> WSGIApplication:
    """In front of everything (keystonemiddleware included): a /ui request without
    X-Auth-Token authenticates with the token of its cookie. The API never reads cookies."""
    def wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO") or "")
        if (path == "/ui" or path.startswith("/ui/")) and "HTTP_X_AUTH_TOKEN" not in environ:
            token = token_from_cookie(str(environ.get("HTTP_COOKIE") or ""))
            if token:
                environ["HTTP_X_AUTH_TOKEN"] = token
        result: Iterable[bytes] = app(environ, start_response)
        return result
    return wsgi
