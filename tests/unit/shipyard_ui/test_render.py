"""The web view's HTML: everything from the site is escaped; empty states say so."""

from __future__ import annotations

import datetime as dt

from shipyard_api.ui import pages
from shipyard_api.ui.graph import group_graph, layers
from shipyard_api.ui.html import Html, tag
from shipyard_api.ui.site import SiteFacts, matches, node_row

EVIL = '<script>alert("x")</script>'
EVIL_ATTR = '"><img src=x onerror=alert(1)>'


def row(name: str, **kw: str) -> dict[str, str]:
    base = node_row({"hostname": name, "rack": "rack01", "power_state": "on",
                     "maas_status": "Deployed"}, {"cordoned": False, "kubelet": {"ready": "True"}},
                    True, ["kubernetes"])
    return {**base, **kw}


def test_text_and_attributes_are_escaped() -> None:
    out = tag("td", EVIL, title=EVIL_ATTR)
    assert "<script>" not in out and "<img" not in out
    assert "&lt;script&gt;" in out and "&quot;&gt;&lt;img" in out
    assert tag("p", Html("<b>ok</b>")) == "<p><b>ok</b></p>"


def test_a_hostile_node_name_cannot_inject_markup_anywhere() -> None:
    facts = SiteFacts(3, [row(EVIL, rack=EVIL_ATTR, power_error=EVIL)], [EVIL])
    page = pages.site_page(facts, {"q": EVIL_ATTR}, user=EVIL)
    assert "<script>" not in page and "<img" not in page
    action = {"id": EVIL_ATTR, "name": EVIL, "state": "running", "parameters": {EVIL: EVIL},
              "steps": [{"id": "s", "name": EVIL, "node": EVIL, "state": "running",
                         "notes": [{"message": EVIL}],
                         "details": {"drain": {"pods_left": 1, "phase": EVIL, "groups": [
                             {"reason": EVIL, "count": 1}]},
                             "tree": {"init_task_id": "t", "t": {"action": EVIL, "node": EVIL,
                                                                "status": EVIL}}}},
                        {"id": "b", "name": "baremetal", "state": "running", "details": {
                            "groups": [{"name": EVIL, "status": "not_started",
                                        "depends_on": [], "nodes": [EVIL]}]}}]}
    html = pages.action_page(action, EVIL)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    plan = {"id": EVIL, "action": EVIL, "parameters": {"target_nodes": [EVIL]},
            "blockers": [{"node": EVIL, "message": EVIL, "source": EVIL}], "warnings": [EVIL],
            "nodes": [{"node": EVIL, "pods": [EVIL], EVIL: {EVIL: [EVIL]}}],
            "groups": [{"name": EVIL, "depends_on": [], "nodes": [EVIL]}],
            "calls": [{"service": EVIL, "request": EVIL, "why": EVIL}], "facts": [{EVIL: EVIL}]}
    assert "<script>" not in pages.plan_page(plan, EVIL)
    assert "<script>" not in pages.plans_page([plan], EVIL)
    assert "<script>" not in pages.actions_page([action], EVIL)
    assert "<script>" not in pages.login_page(EVIL, "/ui/site")


def test_empty_states_are_said() -> None:
    assert "No nodes." in pages.site_page(SiteFacts(None), {}, "u")
    assert "No committed design revision" in pages.site_page(SiteFacts(None), {}, "u")
    assert "No actions yet." in pages.actions_page([], "u")
    assert "No plans yet." in pages.plans_page([], "u")
    facts = SiteFacts(1, [row("node01")])
    assert "No node matches the filter." in pages.site_page(facts, {"rack": "nope"}, "u")


def test_site_filters_by_query_values() -> None:
    r = row("node04", cordoned="yes")
    assert matches(r, {"q": "04", "rack": "RACK01", "cordoned": "yes", "etcd": "yes"})
    assert not matches(r, {"ready": "no"})
    assert not matches(r, {"etcd": "no"})
    assert matches(r, {"power": ""})
    page = pages.site_page(SiteFacts(1, [row("node01"), row("node04", rack="rack02")]),
                           {"rack": "rack02"}, "u")
    assert 'data-node="node04"' in page and 'data-node="node01"' not in page


def test_node_rows_say_absent_or_unknown_when_kubernetes_cannot_tell() -> None:
    drydock = {"hostname": "n", "power_state": None, "maas_status": None, "retired": True,
               "pending_reboot_since": "2026-01-01T00:00:00Z", "reboot_error": "BMC down"}
    gone = node_row(drydock, None, True, [])
    assert (gone["ready"], gone["power"], gone["maas"], gone["retired"], gone["etcd"]) == (
        "absent", "unknown", "absent", "yes", "no")
    assert gone["reboot"] == "pending since 2026-01-01T00:00:00Z; error: BMC down"
    assert node_row(drydock, None, False, [])["ready"] == "unknown"


def test_a_running_action_refreshes_and_shows_durations_and_drain_progress() -> None:
    now = dt.datetime(2026, 1, 1, 0, 2, 5, tzinfo=dt.UTC)
    action = {"id": "A1", "name": "redeploy_server", "state": "running", "steps": [
        {"id": "decommission.node05", "name": "decommission", "node": "node05",
         "state": "running", "start": "2026-01-01T00:00:00.000Z", "end": None, "details": {
             "drain": {"pods_left": 3, "phase": "evicting", "removed": 1, "groups": [
                 {"reason": "PDB web allows 0 disruptions", "count": 3}]}}},
        {"id": "preflight", "name": "preflight", "state": "success",
         "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:04Z"}]}
    page = pages.action_page(action, "u", now)
    assert 'http-equiv="refresh"' in page
    assert "2m05s so far" in page and ">4s<" in page
    assert "PDB web allows 0 disruptions: 3 pods" in page
    done = pages.action_page({**action, "state": "complete"}, "u", now)
    assert 'http-equiv="refresh"' not in done


def test_the_group_graph_places_groups_after_their_dependencies() -> None:
    groups = [{"name": "control", "status": "succeeded", "depends_on": [], "nodes": ["a"]},
              {"name": "compute", "status": "not_started", "reason": "in progress: deploying",
               "depends_on": ["control"], "nodes": ["b", "c"]},
              {"name": "storage", "status": "failed", "critical": True,
               "depends_on": ["compute", "control"], "nodes": []}]
    assert layers(groups) == {"control": 0, "compute": 1, "storage": 2}
    out = group_graph(groups)
    assert out.startswith("<svg") and out.count("<line") == 3
    assert 'class="group group-succeeded"' in out and 'class="group group-running"' in out
    assert 'class="group group-failed"' in out
    assert group_graph([]) == ""


def test_a_plan_leads_with_its_verdict_and_blockers_grouped_by_what_blocks() -> None:
    plan = {"id": "P1", "action": "redeploy_server", "verdict": "blocked",
            "parameters": {"target_nodes": ["node06"]},
            "warnings": [{"node": None, "source": "promenade", "message": "capacity is tight"}],
            "blockers": [{"node": "node06", "source": "drydock",
                          "message": "IPMI cannot erase sda alone"},
                         {"node": "node06", "source": "promenade", "message":
                          "PodDisruptionBudget demo/web allows 0 disruptions now (needs 2 "
                          "healthy, has 2); it covers demo/web-1"},
                         {"node": "node06", "source": "promenade", "message":
                          "etcd cluster kubernetes: removing node06 is refused: quorum lost"}],
            "nodes": [{"node": "node06", "path": {"path": "graceful", "reason": "Ready"},
                       "phases": [{"phase": "drain", "runs": True, "note": ""},
                                  {"phase": "shutdown-kubelet", "runs": False,
                                   "note": "skipped: off"}],
                       "calls": [{"service": "promenade", "request": "POST /x", "why": "drain",
                                  "node": "node06", "step": "decommission", "runs": []},
                                 {"service": "drydock", "request": "POST /t", "why": "wipe",
                                  "node": "node06", "step": "destroy_nodes", "runs": []}],
                       "baremetal": {"steps": ["power_off", "release"]}}]}
    page = pages.plan_page(plan, "u")
    assert page.index("BLOCKED") < page.index("Blockers (3)") < page.index("Nodes (1)") \
        < page.index("Warnings (1)")
    assert "redeploy_server on node06 would be refused: 3 blockers" in page
    for reason, obj in (("pdb", "PodDisruptionBudget demo/web"),
                        ("quorum", "etcd cluster kubernetes"), ("wipe", "disks of node06")):
        section = page[page.index(f'data-reason="{reason}"'):]
        assert section.index(obj) < section.index("</section>"), reason
    assert "node06: PodDisruptionBudget demo/web allows 0" in page  # which node it holds
    row = page[page.index('<tr data-node="node06"'):]
    assert 'data-path="graceful"' in row
    timeline = [row.index(f'data-phase="{p}"') for p in ("drain", "shutdown-kubelet",
                                                          "power_off", "release")]
    assert timeline == sorted(timeline) and ">skipped<" in row
    assert "<table class=\"facts\"" not in page  # no nested key/value dumps
    clear = pages.plan_page({**plan, "blockers": [], "verdict": "warnings"}, "u")
    assert "<strong>GO</strong>" in clear and "would run; 1 warning" in clear
    listing = pages.plans_page([plan], "u")
    assert 'data-plan="P1"' in listing and "blocked" in listing


def test_sign_in_goes_back_only_to_pages_of_the_web_view() -> None:
    assert pages.next_url("/ui/actions/A1") == "/ui/actions/A1"
    assert pages.next_url("https://evil.example/") == "/ui/site"
    assert pages.next_url("//evil.example/ui") == "/ui/site"
    assert pages.next_url(None) == "/ui/site"
    assert pages.next_url("/ui/n\u00f6de") == "/ui/site"  # only ASCII goes into Location
    assert pages.next_url("/ui/a\r\nSet-Cookie: x=1") == "/ui/site"


def test_a_live_drydock_step_shows_the_task_tree_as_it_is_now() -> None:
    from common.context import RequestContext
    from common.errors import BadGateway
    from shipyard_api.ui.actions import ActionPages

    tree = {"init_task_id": "T", "T": {"action": "destroy_nodes", "status": "running",
                                       "subtask_id_list": ["S"]},
            "S": {"action": "destroy_nodes", "node": "node05", "status": "running"}}

    class Actions:
        def get(self, action_id: str) -> dict:
            return {"id": action_id, "steps": [
                {"id": "destroy_nodes.node05", "state": "waiting",
                 "details": {"task": {"task_id": "T"}}},
                {"id": "prepare_nodes.node05", "state": "running",
                 "details": {"task": {"task_id": "GONE"}}},
                {"id": "deploy_nodes.node05", "state": "success",
                 "details": {"task": {"task_id": "OLD"}, "tree": {"init_task_id": "OLD"}}}]}

    class Drydock:
        asked: list[str] = []

        def task_tree(self, task_id: str, *, ctx: RequestContext) -> dict:
            self.asked.append(task_id)
            if task_id == "GONE":
                raise BadGateway("Drydock: 500")
            return tree

    drydock = Drydock()
    view = ActionPages(Actions(), drydock).get("A", RequestContext())  # type: ignore[arg-type]
    steps = {s["id"]: s for s in view["steps"]}
    assert steps["destroy_nodes.node05"]["details"]["tree"] == tree
    assert "tree" not in steps["prepare_nodes.node05"]["details"]
    assert drydock.asked == ["T", "GONE"]  # a finished step keeps the tree it recorded
    page = pages.action_page(view, "u")
    assert "Drydock task tree" in page and "destroy_nodes node05" in page


def test_an_action_names_the_budget_and_the_etcd_cluster_that_hold_it() -> None:
    action = {"id": "A2", "name": "redeploy_server", "state": "running", "steps": [
        {"id": "decommission.node05", "name": "decommission", "node": "node05", "index": 3,
         "state": "running", "details": {"drain": {"pods_left": 2, "phase": "evicting",
                                                   "groups": [
             {"reason": "PDB demo/web allows 0 disruptions (needs 2 healthy pods, has 2)",
              "count": 2}, {"reason": "terminating: evicted, waiting for the pod to exit",
                            "count": 1}]}}},
        {"id": "decommission.node02", "name": "decommission", "node": "node02", "index": 4,
         "state": "waiting", "reason": "etcd cluster kubernetes: removing node02 is refused",
         "notes": [{"at": "2026-01-01T00:00:01Z", "message": "retrying in 5 s"}]},
        {"id": "preflight", "name": "preflight", "index": 0, "state": "success",
         "notes": [{"at": "2026-01-01T00:00:00Z", "message": "design ok"}]}]}
    part = pages.live_section(action)
    pdb = part[part.index('data-reason="pdb"'):]
    assert pdb.index("PodDisruptionBudget demo/web") < pdb.index("</section>")
    assert "2 pods" in pdb[:pdb.index("</section>")]
    quorum = part[part.index('data-reason="quorum"'):]
    assert quorum.index("etcd cluster kubernetes") < quorum.index("</section>")
    assert "terminating" not in part[:part.index("Progress per node")]  # not a blocker
    rows = part[part.index('class="nodes-progress"'):]
    assert rows.index('data-node="action"') < rows.index('data-node="node05"') \
        < rows.index('data-node="node02"')  # the action-wide steps, then in step order
    assert '<time datetime="2026-01-01T00:00:00Z"' in part and "design ok" in part
    assert 'id="log-preflight"' in part


def test_each_node_card_says_its_state_in_words() -> None:
    from shipyard_api.ui.site_page import glance

    assert glance(row("n")) == "ready"
    assert glance(row("n", cordoned="yes")) == "cordoned"
    assert glance(row("n", ready="no")) == "not ready"
    assert glance(row("n", ready="absent", maas="Deploying")) == "deploying"
    assert glance(row("n", ready="absent", maas="Ready")) == "not in kubernetes"
    assert glance(row("n", power="unknown")) == "power unknown"
    assert glance(row("n", power="off")) == "powered off"
    assert glance(row("n", retired="yes", power="off")) == "retired"
    action = {"id": "A9", "name": "redeploy_server", "state": "running",
              "target_nodes": ["node02"]}
    page = pages.site_page(SiteFacts(1, [row("node01"), row("node02", cordoned="yes")]), {},
                           "u", [action, {**action, "id": "A8", "state": "complete"}])
    card = page[page.index('data-node="node02"'):]
    assert 'data-glance="cordoned">cordoned<' in card and "/ui/actions/A9" in card
    assert "/ui/actions/A8" not in page
    assert "ready: 1" in page and "cordoned: 1" in page
