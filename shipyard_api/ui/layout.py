"""The frame every page of the web view shares: landmarks, navigation, the style sheet, and
state badges that say their state in words as well as in colour."""

from __future__ import annotations

from collections.abc import Iterable

from shipyard_api.ui.html import Html, tag

STATIC = "/ui/static"
# A state's tone (its colour family); the badge always shows the state's words too.
TONES = {"success": "ok", "complete": "ok", "succeeded": "ok", "clear": "ok", "go": "ok",
         "ready": "ok",
         "failed": "bad", "blocked": "bad", "stopped": "bad", "not ready": "bad",
         "running": "info", "stopping": "info", "deploying": "info", "in action": "info",
         "waiting": "warn", "paused": "warn", "warnings": "warn", "cordoned": "warn",
         "not in kubernetes": "warn", "power unknown": "warn",
         "pending": "idle", "skipped": "idle", "retired": "idle", "powered off": "idle"}


def tone(value: object) -> str:
    return TONES.get(str(value).lower(), "idle")


def badge(value: object, *, text: object = None, **attrs: object) -> Html:
    """A state in words on its colour (`text` when the words differ from the state)."""
    return tag("span", value if text is None else text,
               class_=f"badge tone-{tone(value)} state-{value}", **attrs)


def state(value: object) -> Html:
    return badge(value)


def layout(title: str, body: object, *, user: str | None = None, refresh: int | None = None,
           scripts: tuple[str, ...] = (), fallback_refresh: int | None = None) -> Html:
    """The page: a banner with the navigation, the main content. `refresh` reloads the
    page every so many seconds; `fallback_refresh` only where scripts cannot run."""
    nav = tag("nav", tag("a", "Site", href="/ui/site"), tag("a", "Actions", href="/ui/actions"),
              tag("a", "Plans", href="/ui/plans"), aria_label="Main")
    who = tag("span", tag("span", user or ""), " ",
              tag("form", tag("button", "Sign out", type="submit"), method="post",
                  action="/ui/logout"), class_="who") if user else None
    header = tag("header", tag("span", "Berth", class_="brand"), nav, who)
    head = tag("head", tag("meta", charset="utf-8"),
               tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
               tag("meta", http_equiv="refresh", content=str(refresh)) if refresh else None,
               tag("noscript", tag("meta", http_equiv="refresh",
                                   content=str(fallback_refresh))) if fallback_refresh else None,
               tag("title", f"{title} · Berth"),
               tag("link", rel="stylesheet", href=f"{STATIC}/berth.css"),
               [tag("script", src=f"{STATIC}/{s}", defer=True) for s in scripts])
    body_html = tag("body", tag("a", "Skip to content", href="#content", class_="skip"),
                    header, tag("main", body, id="content"))
    return Html("<!DOCTYPE html>" + tag("html", head, body_html, lang="en"))


def problems(items: Iterable[object] | None) -> Html:
    if not items:
        return Html("")
    return tag("div", tag("ul", [tag("li", p) for p in items]), class_="problems",
               role="status")
