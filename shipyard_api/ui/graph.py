"""The deployment-group graph of deploy_site/update_site as inline SVG: groups in columns by
dependency depth, an arrow from each group to the ones that wait for it, colour by state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shipyard_api.ui.fields import entries
from shipyard_api.ui.html import Html, svg

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 170, 46, 60, 18, 10
COLOURS = {"succeeded": "#cdeccd", "failed": "#f6c9c9", "running": "#cfe2fb",
           "pending": "#eeeeee"}


def group_state(group: Mapping[str, object]) -> str:
    status = str(group.get("status") or "")
    if status in ("succeeded", "failed"):
        return status
    if str(group.get("reason") or "").startswith("in progress"):
        return "running"
    return "pending"


def layers(groups: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Each group's column: 0 without dependencies, else one more than its deepest one."""
    deps = {str(g["name"]): [str(d) for d in entries(g.get("depends_on"))] for g in groups}
    depth: dict[str, int] = {}

    def of(name: str, seen: frozenset[str]) -> int:
        if name not in depth:
            inner = [of(d, seen | {name}) for d in deps.get(name, [])
                     if d in deps and d not in seen]
            depth[name] = 1 + max(inner) if inner else 0
        return depth[name]

    for name in deps:
        of(name, frozenset())
    return depth


def group_graph(groups: Sequence[Mapping[str, object]]) -> Html:
    """The SVG, or nothing when there are no groups."""
    if not groups:
        return Html("")
    depth = layers(groups)
    rows: dict[int, int] = {}
    at: dict[str, tuple[int, int]] = {}
    for g in groups:
        col = depth[str(g["name"])]
        row = rows.get(col, 0)
        rows[col] = row + 1
        at[str(g["name"])] = (PAD + col * (BOX_W + GAP_X), PAD + row * (BOX_H + GAP_Y))
    width = PAD * 2 + (max(depth.values()) + 1) * (BOX_W + GAP_X) - GAP_X
    height = PAD * 2 + max(rows.values()) * (BOX_H + GAP_Y) - GAP_Y
    edges = []
    for g in groups:
        x2, y2 = at[str(g["name"])]
        for dep in entries(g.get("depends_on")):
            if str(dep) in at:
                x1, y1 = at[str(dep)]
                edges.append(svg("line", x1=x1 + BOX_W, y1=y1 + BOX_H // 2, x2=x2 - 4,
                                 y2=y2 + BOX_H // 2, stroke="#777",
                                 marker_end="url(#arrow)"))
    boxes = []
    for g in groups:
        x, y = at[str(g["name"])]
        state = group_state(g)
        nodes = entries(g.get("nodes"))
        boxes.append(svg(
            "g",
            svg("title", f"{g['name']}: {state}"
                + (f" ({g.get('reason')})" if g.get("reason") else "")
                + f"; nodes: {', '.join(str(n) for n in nodes) or 'none'}"),
            svg("rect", x=x, y=y, width=BOX_W, height=BOX_H, rx=6, fill=COLOURS[state],
                stroke="#c0392b" if g.get("critical") and state == "failed" else "#555"),
            svg("text", str(g["name"]), x=x + 8, y=y + 18, font_size=13, font_weight="bold"),
            svg("text", f"{state} · {len(nodes)} node(s)"
                + (" · critical" if g.get("critical") else ""),
                x=x + 8, y=y + 36, font_size=11),
            class_=f"group group-{state}", data_group=str(g["name"])))
    arrow = svg("defs", svg("marker", svg("path", d="M0,0 L8,4 L0,8 z", fill="#777"),
                            id="arrow", markerWidth=8, markerHeight=8, refX=8, refY=4,
                            orient="auto"))
    return svg("svg", arrow, edges, boxes, xmlns="http://www.w3.org/2000/svg",
               width=width, height=height, viewBox=f"0 0 {width} {height}",
               role="img", aria_label="deployment groups", class_="groups")
