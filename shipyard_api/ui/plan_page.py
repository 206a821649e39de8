"""A plan as an operator reads it: the verdict first, the blockers grouped by reason with the
object that blocks, then one row per node with its path and its phases as a timeline; the
details (pods, budgets, etcd quorum, disks, calls) as purpose-made tables below."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from shipyard_api.ui.blockers import HOLDS, Finding, bmc_of, findings, grouped
from shipyard_api.ui.fields import entries, fields, mappings
from shipyard_api.ui.graph import group_graph
from shipyard_api.ui.html import Child, Html, tag
from shipyard_api.ui.layout import badge, layout

Phase = tuple[str, str, str]  # name, "runs" | "skipped", note


def plan_targets(plan: Mapping[str, object]) -> str:
    targets = entries(fields(plan.get("parameters")).get("target_nodes"))
    return ", ".join(str(n) for n in targets) if targets else "site"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def short(value: object) -> str:
    """A value in a table cell: lists joined, objects as compact JSON."""
    if isinstance(value, (list, tuple)):
        return ", ".join(short(v) for v in value) or "none"
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)
    return "" if value is None else str(value)


def verdict_box(plan: Mapping[str, object], blockers: int, warnings: int) -> Html:
    go = blockers == 0
    word = "GO" if go else "BLOCKED"
    what = (f"{plan.get('action')} on {plan_targets(plan)} "
            + ("would run" if go else f"would be refused: {plural(blockers, 'blocker')}")
            + (f"; {plural(warnings, 'warning')}" if warnings else ""))
    return tag("div", tag("strong", word), what, role="status",
               class_=f"verdict tone-{'ok' if go else 'bad'}",
               data_verdict=plan.get("verdict"))


def reason_groups(items: list[Finding], kind: str) -> Html:
    """One box per reason: its heading and, per finding, the object that blocks and why."""
    out = []
    for _, group in grouped(items):
        rows = [tag("li", tag("span", f.obj, class_="obj") if f.obj else None,
                    " — " if f.obj else None,
                    f"{f.node}: " if f.node and f.node not in f.message else None, f.message,
                    tag("span", f" [{f.source}]", class_="muted") if f.source else None,
                    data_node=f.node or None) for f in group]
        out.append(tag("section", tag("h3", f"{group[0].heading} ({len(group)})"),
                       tag("ul", rows), class_=f"reason-group {kind}",
                       data_reason=group[0].reason))
    return Html("".join(out))


def phases_of(entry: Mapping[str, object]) -> list[Phase]:
    out = []
    for p in mappings(entry.get("phases")):
        runs = p.get("runs", True)
        out.append((str(p.get("phase")), "runs" if runs else "skipped",
                    str(p.get("note") or "")))
    return out


def timeline(entry: Mapping[str, object],
             plan: Mapping[str, object]) -> list[tuple[str, list[Phase]]]:
    """The node's steps in order, each with the phases it runs there."""
    calls = [c for c in mappings(entry.get("calls")) if c.get("step")]
    baremetal = fields(entry.get("baremetal"))
    drydock_steps = [(str(s), "runs", "") for s in entries(baremetal.get("steps"))]
    if calls:
        out = []
        for c in calls:
            step = str(c["step"])
            if step == "decommission":
                inner = phases_of(entry)
            elif step == "destroy_nodes":
                inner = drydock_steps
            else:
                inner = [(str(t), "runs", "") for t in entries(c.get("runs"))]
            out.append((step, inner))
        return out
    if plan.get("action") == "relabel_nodes":
        return [("relabel_nodes", [])]
    return [("prepare_nodes", []), ("deploy_nodes", drydock_steps), ("wait_node_ready", []),
            ("relabel_nodes", [])]


def chips(steps: list[tuple[str, list[Phase]]], marks: Mapping[str, str]) -> Html:
    """The timeline; `marks` says which step or phase a blocker ("blocked") or a warning
    ("warning") of the node holds up."""
    def chip(name: str, how: str, note: str, cls: str = "") -> Html:
        mark = marks.get(name)
        colour = {"blocked": "bad", "warning": "warn"}.get(mark or "", "idle" if cls or
                                                             how == "skipped" else "info")
        return tag("span", name, tag("small", mark or "skipped") if mark or how == "skipped"
                   else None, class_=f"chip {how} {cls} tone-{colour}".replace("  ", " "),
                   title=note or None, data_phase=name, data_mark=mark)
    items = []
    for step, inner in steps:
        body: list[Child] = [chip(step, "runs", "", "step")]
        if inner:
            body.append(tag("ol", [tag("li", chip(*p)) for p in inner],
                            class_="timeline phases", aria_label=f"{step} phases"))
        items.append(tag("li", body))
    return tag("ol", items, class_="timeline", aria_label="steps in order")


def marks_of(blockers: list[Finding], warnings: list[Finding]) -> dict[str, str]:
    out = {HOLDS[f.reason]: "warning" for f in warnings if f.reason in HOLDS}
    out.update({HOLDS[f.reason]: "blocked" for f in blockers if f.reason in HOLDS})
    return out


def path_cell(entry: Mapping[str, object], plan: Mapping[str, object]) -> Html:
    path = entry.get("path")
    if isinstance(path, Mapping):
        chosen = path.get("path")
        word = {"graceful": "graceful", "fence-first": "fenced"}.get(str(chosen), "refused")
        return tag("div", badge("success" if chosen == "graceful" else
                                "waiting" if chosen else "failed", text=word,
                                data_path=word),
                   tag("div", path.get("reason"), class_="progress"))
    if entry.get("groups"):
        return tag("div", badge("pending", text="deploy", data_path="deploy"),
                   tag("div", "group " + ", ".join(str(g) for g in entries(entry["groups"])),
                       class_="progress"))
    word = "relabel" if plan.get("action") == "relabel_nodes" else "—"
    return badge("pending", text=word, data_path=word)


def node_rows(plan: Mapping[str, object], nodes: list[Mapping[str, object]],
              blockers: list[Finding], warnings: list[Finding]) -> Html:
    rows = []
    for entry in nodes:
        name = str(entry.get("node"))
        mine = [f for f in blockers if f.node == name]
        theirs = [f for f in warnings if f.node == name]
        said = [badge("failed", text=plural(len(mine), "blocker")) if mine else None,
                " " if mine and theirs else None,
                badge("waiting", text=plural(len(theirs), "warning")) if theirs else None]
        rows.append(tag("tr", tag("th", tag("a", name, href=f"#node-{quote(name)}"),
                                  scope="row"),
                        tag("td", path_cell(entry, plan)),
                        tag("td", chips(timeline(entry, plan), marks_of(mine, theirs)),
                            class_="tl"),
                        tag("td", said if mine or theirs else tag("span", "none",
                                                                   class_="muted")),
                        data_node=name))
    return tag("table", tag("tr", [tag("th", h, scope="col") for h in (
                   "Node", "Path", "Steps and phases", "Findings")]),
               rows, class_="plan-nodes")


def simple_table(caption: str, headers: Sequence[str], rows: list[list[Child]],
                 cls: str) -> Html:
    if not rows:
        return Html("")
    return tag("table", tag("caption", caption),
               tag("tr", [tag("th", h, scope="col") for h in headers]),
               [tag("tr", [tag("td", c) for c in r]) for r in rows], class_=cls)


def drain_part(drain: Mapping[str, object]) -> list[Child]:
    pods = [(k, p) for k in ("evict", "delete", "awaiting", "skipped")
            for p in mappings(drain.get(k))]
    budgets = mappings(drain.get("budgets"))
    locks = [*entries(drain.get("eviction_locks")), *entries(drain.get("agent_locks"))]
    return [
        tag("p", f"Method: {drain.get('method')}. ",
            "Can finish." if drain.get("can_finish") else
            f"Cannot finish: {short(drain.get('blocked_by'))}.",
            f" Locks held: {short(locks)}." if locks else None),
        simple_table("Pods on the node", ("Pod", "Owner", "What happens"),
                     [[p.get("pod"), p.get("owner") or "none", p.get("reason")]
                      for _, p in pods], "pods"),
        simple_table("PodDisruptionBudgets covering them",
                     ("Budget", "Disruptions allowed", "Healthy / needed", "Pods here"),
                     [[b.get("budget"), b.get("disruptions_allowed"),
                       f"{b.get('current_healthy')} / {b.get('desired_healthy')}",
                       short(b.get("pods_on_node"))] for b in budgets], "budgets")]


def etcd_part(clusters: object) -> Html:
    rows = []
    for c in mappings(clusters):
        before, after = fields(c.get("before")), fields(c.get("after"))
        rows.append([c.get("cluster"), short(c.get("removing")) if c.get("removing") else "none",
                     f"{before.get('healthy', '?')}/{before.get('members', '?')} healthy, "
                     f"quorum {before.get('quorum', '?')}",
                     f"{after.get('healthy', '?')}/{after.get('members', '?')} healthy, "
                     f"quorum {after.get('quorum', '?')}",
                     "yes" if c.get("allowed") else f"no: {c['error']}" if c.get("error")
                     else "no"])
    return simple_table("etcd clusters", ("Cluster", "Removing", "Before", "After", "Allowed"),
                        rows, "etcd")


def baremetal_part(baremetal: Mapping[str, object]) -> list[Child]:
    bmc = fields(baremetal.get("bmc"))
    wipe = fields(baremetal.get("wipe"))
    line = (f"BMC {short(bmc.get('type'))} {short(bmc.get('address'))}: "
            + (f"reachable, power {bmc.get('power_state')}" if bmc.get("reachable")
               else f"not reachable ({bmc.get('error') or 'no power state'})")
            if bmc else "BMC: not previewed")
    disks = mappings(wipe.get("disks"))
    return [tag("p", line, f"; MAAS {baremetal.get('maas_status') or 'does not know it'}",
                "; retired" if baremetal.get("retired") else None),
            tag("p", wipe["refusal"], class_="bad") if wipe and wipe.get("refusal") else None,
            simple_table("Disks", ("Disk", "Result", "Method"),
                         [[d.get("disk"), d.get("result"), d.get("method") or ""]
                          for d in disks], "disks")]


def node_details(entry: Mapping[str, object]) -> Html:
    name = str(entry.get("node"))
    parts: list[Child] = []
    drain = entry.get("drain")
    if isinstance(drain, Mapping):
        parts += drain_part(drain)
    parts.append(etcd_part(entry.get("etcd")))
    labels = entry.get("labels")
    if isinstance(labels, Mapping):
        parts.append(tag("p", "Design labels: " + (", ".join(
            f"{k}={v}" for k, v in sorted(labels.items())) or "none")))
    baremetal = entry.get("baremetal")
    if isinstance(baremetal, Mapping):
        parts += baremetal_part(baremetal)
    return tag("details", tag("summary", f"{name}: pods, budgets, etcd, BMC and disks"),
               parts, id=f"node-{name}")


def calls_table(calls: Sequence[object]) -> Html:
    rows = [c for c in calls if isinstance(c, Mapping)]
    return tag("table", tag("tr", [tag("th", h, scope="col") for h in (
        "Step", "Node", "Service", "Request", "Why")]), [
        tag("tr", tag("td", c.get("step") or ""), tag("td", c.get("node") or ""),
            tag("td", c.get("service")), tag("td", tag("code", c.get("request"))),
            tag("td", c.get("why"))) for c in rows], class_="calls")


def plan_page(plan: Mapping[str, object], user: str | None) -> Html:
    nodes = mappings(plan.get("nodes"))
    bmcs = {str(n.get("node")): b for n in nodes if (b := bmc_of(n))}
    blockers = findings(plan.get("blockers"), bmcs)
    warnings = findings(plan.get("warnings"), bmcs)
    body: list[Child] = [
        tag("h1", "Plan ", tag("small", plan.get("id"))),
        verdict_box(plan, len(blockers), len(warnings)),
        tag("p", f"Design revision {plan.get('revision_id')}; created {plan.get('created')} "
                 f"by {plan.get('user')}; "
                 + ("expired" if plan.get("expired") else f"expires {plan.get('expires')}"),
            class_="muted")]
    if blockers:
        body += [tag("h2", f"Blockers ({len(blockers)})"), reason_groups(blockers, "blocker")]
    if nodes:
        body += [tag("h2", f"Nodes ({len(nodes)})"), node_rows(plan, nodes, blockers, warnings)]
    groups = [g for g in mappings(plan.get("groups")) if "name" in g]
    if groups:
        body += [tag("h2", "Deployment groups"), group_graph(groups)]
    body += [tag("h2", f"Warnings ({len(warnings)})"),
             reason_groups(warnings, "warning") if warnings else tag("p", "None.",
                                                                       class_="muted")]
    if nodes:
        body += [tag("h2", "Node details"), [node_details(n) for n in nodes]]
    if plan.get("calls") or any(n.get("calls") for n in nodes):
        every = entries(plan.get("calls")) + [c for n in nodes for c in entries(n.get("calls"))]
        body += [tag("h2", "What would be called"), calls_table(every)]
    facts = mappings(plan.get("facts"))
    if facts:
        body.append(tag("details", tag("summary", f"Facts the steps re-check ({len(facts)})"),
                        simple_table("Re-checked when each step starts",
                                     ("Step", "Fact", "Planned", "Rule"),
                                     [[f.get("step"), f.get("fact"), short(f.get("value")),
                                       f.get("rule")] for f in facts], "facts"),
                        id="facts"))
    return layout(f"Plan {plan.get('id')}", body, user=user)
