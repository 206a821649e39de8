"""The site at a glance: per rack, a card per node whose state is said in a word and a colour
(ready, cordoned, not ready, powered off, ...), with its facts and the action it is in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote

from shipyard_api.ui.fields import entries
from shipyard_api.ui.html import Child, Html, tag
from shipyard_api.ui.layout import badge, layout, problems, tone
from shipyard_api.ui.site import FILTERS, SiteFacts, matches
from shipyard_api.workflow.states import ActionState as A

FILTER_CHOICES = {"power": ("on", "off", "unknown"), "ready": ("yes", "no", "absent"),
                  "cordoned": ("yes", "no"), "etcd": ("yes", "no"), "retired": ("yes", "no")}
GLANCE = ("ready", "cordoned", "not ready", "not in kubernetes", "deploying", "power unknown",
          "powered off", "retired", "in action")
LIVE = (A.PENDING, A.RUNNING, A.PAUSED, A.STOPPING)


def glance(row: Mapping[str, object]) -> str:
    """One word for the node's state, the worst first."""
    if row.get("retired") == "yes":
        return "retired"
    if row.get("power") == "unknown":
        return "power unknown"
    if row.get("power") == "off":
        return "powered off"
    ready = row.get("ready")
    if ready == "yes":
        return "cordoned" if row.get("cordoned") == "yes" else "ready"
    if ready == "no":
        return "not ready"
    if str(row.get("maas") or "").lower() in ("deploying", "commissioning", "releasing",
                                              "disk erasing", "allocated"):
        return "deploying"
    return "not in kubernetes"


def node_actions(actions: Sequence[Mapping[str, object]]) -> dict[str, list[Mapping[str, object]]]:
    """The actions not yet ended, per node they target."""
    out: dict[str, list[Mapping[str, object]]] = {}
    for a in actions:
        if a.get("state") in LIVE:
            for n in entries(a.get("target_nodes")):
                out.setdefault(str(n), []).append(a)
    return out


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
               class_="filters", role="search", aria_label="Filter nodes")


def card(row: Mapping[str, object], busy: list[Mapping[str, object]]) -> Html:
    word = glance(row)
    facts: list[tuple[str, object]] = [
        ("power", [row.get("power"), f" ({row['power_error']})" if row.get("power_error")
                   else None]),
        ("MAAS", row.get("maas")), ("Kubernetes", {"yes": "Ready", "no": "NotReady",
                                                   "absent": "absent"}.get(
            str(row.get("ready")), row.get("ready"))),
        ("cordoned", row.get("cordoned")), ("etcd", row.get("etcd"))]
    if row.get("retired") == "yes":
        facts.append(("retired", row.get("retired_reason") or "yes"))
    if row.get("reboot"):
        facts.append(("reboot", row.get("reboot")))
    for a in busy:
        facts.append(("action", tag("a", f"{a.get('name')} ({a.get('state')})",
                                    href=f"/ui/actions/{quote(str(a.get('id')))}")))
    return tag("li", tag("h3", row.get("name"), badge(word, data_glance=word)),
               tag("dl", [[tag("dt", k), tag("dd", v)] for k, v in facts]),
               class_=f"card tone-border-{tone(word)}", data_node=row.get("name"),
               data_state=word, style=None)


def legend(rows: Sequence[Mapping[str, object]]) -> Html:
    counts: dict[str, int] = {}
    for r in rows:
        counts[glance(r)] = counts.get(glance(r), 0) + 1
    return tag("p", [badge(w, text=f"{w}: {counts[w]}") for w in GLANCE if w in counts],
               class_="legend", aria_label="nodes per state")


def site_page(facts: SiteFacts, filters: Mapping[str, str], user: str | None,
              actions: Sequence[Mapping[str, object]] = ()) -> Html:
    rows = [n for n in facts.nodes if matches(n, filters)]
    busy = node_actions(actions)
    body: list[Child] = [tag("h1", "Site"),
                       tag("p", f"Committed design revision {facts.revision}"
                           if facts.revision else "No committed design revision",
                           class_="muted"),
                       problems(facts.problems), filter_form(facts, filters)]
    if not facts.nodes:
        body.append(tag("p", "No nodes.", class_="empty"))
    elif not rows:
        body.append(tag("p", "No node matches the filter.", class_="empty"))
    else:
        body.append(legend(rows))
    racks = []
    for rack in sorted({str(r["rack"]) for r in rows}):
        racked = sorted((r for r in rows if str(r["rack"]) == rack), key=lambda r: r["name"])
        racks.append(tag("section", tag("h2", f"Rack {rack}" if rack else "No rack"),
                         tag("ul", [card(r, busy.get(str(r["name"]), [])) for r in racked],
                             class_="cards"),
                         class_="rack", data_rack=rack, aria_label=f"Rack {rack or 'none'}"))
    if racks:
        body.append(tag("div", racks, class_="racks"))
    return layout("Site", body, user=user)


def site_filters(params: Mapping[str, object]) -> dict[str, str]:
    return {k: str(params[k]) for k in FILTERS if isinstance(params.get(k), str)}
