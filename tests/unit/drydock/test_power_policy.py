"""Power policy per request: soft-then-hard with a grace period (request, design, config),
soft-only, hard on request; every power-off records what the node got."""

from __future__ import annotations

from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BerthError
from drydock_api.nodes import power
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import SiteFactory
from tests.unit.drydock.test_orchestrator import names, run_task


def site_with_grace(make_site: SiteFactory, nodes: list[str], grace: float | None,
                    **groups: dict[str, Any]) -> Any:
    docs = designs.simple_site(nodes)
    if grace is not None:
        region = next(d for d in docs if d["schema"] == "drydock/Region/v1")
        region["data"]["power"] = {"grace_period": grace}
    return make_site(nodes, docs=docs, **groups)


def power_record(task: dict[str, Any], node: str) -> dict[str, Any]:
    found = [m["power"] for m in task["result"]["details"]["messageList"]
             if m.get("node") == node and "power" in m]
    assert len(found) == 1, task["result"]["details"]["messageList"]
    return dict(found[0])


def test_an_os_that_ignores_the_shutdown_is_forced_after_the_design_grace_period(
        make_site: SiteFactory):
    site = site_with_grace(make_site, ["n1"], 0.3)
    site.oob.ignore_graceful.add(site.address("n1"))
    task = run_task(site, "power_off_nodes", names("n1"))
    assert task["result"]["status"] == "success"
    got = power_record(task, "n1")
    assert got["outcome"] == "forced" and got["power_policy"] == "soft-then-hard"
    assert got["grace_period"] == 0.3 and got["grace_period_from"] == "design"
    assert 0.3 <= got["forced_after"] < 3
    assert site.oob.calls[("graceful", site.address("n1"))] == 1
    assert site.oob.calls[("force_off", site.address("n1"))] == 1


def test_the_request_grace_period_overrides_the_design(make_site: SiteFactory):
    site = site_with_grace(make_site, ["n1"], 600.0)  # the design would wait ten minutes
    site.oob.ignore_graceful.add(site.address("n1"))
    task = run_task(site, "destroy_nodes", names("n1"), {"grace_period": 0.2})
    assert task["result"]["status"] == "success"
    got = power_record(task, "n1")
    assert got["grace_period_from"] == "request" and got["grace_period"] == 0.2
    assert got["outcome"] == "forced" and got["forced_after"] < 5


def test_a_node_that_shuts_down_records_a_graceful_power_off(make_site: SiteFactory):
    site = site_with_grace(make_site, ["n1"], None)
    task = run_task(site, "power_off_nodes", names("n1"))
    got = power_record(task, "n1")
    assert got["outcome"] == "graceful" and got["grace_period_from"] == "config"
    assert site.oob.calls[("force_off", site.address("n1"))] == 0


def test_hard_on_request_never_asks_a_graceful_shutdown(make_site: SiteFactory):
    site = site_with_grace(make_site, ["n1"], 600.0)
    task = run_task(site, "destroy_nodes", names("n1"), {"power_policy": "hard"})
    assert task["result"]["status"] == "success"
    assert power_record(task, "n1")["outcome"] == "hard"
    assert site.oob.calls[("graceful", site.address("n1"))] == 0
    assert site.oob.calls[("force_off", site.address("n1"))] == 1


def test_soft_only_fails_cleanly_when_the_node_stays_on(make_site: SiteFactory):
    site = site_with_grace(make_site, ["n1"], None)
    site.oob.ignore_graceful.add(site.address("n1"))
    task = run_task(site, "destroy_nodes", names("n1"),
                    {"power_policy": "soft-only", "grace_period": 0.2})
    assert task["result"]["status"] == "failure"
    got = power_record(task, "n1")
    assert got["outcome"] == "not-off" and "soft-only forbids forcing" in got["summary"]
    assert site.oob.power.get(site.address("n1"), "on") == "on"
    assert site.oob.calls[("force_off", site.address("n1"))] == 0
    assert "id-n1" in site.maas.machines  # nothing after the power-off ran


@pytest.mark.parametrize("options, problem", [
    ({"power_policy": "gentle"}, "options.power_policy must be one of soft-then-hard, "
                                 "soft-only, hard, not 'gentle'"),
    ({"grace_period": -1}, "options.grace_period must be a number of seconds from 0 to 86400"),
    ({"grace_period": "30"}, "options.grace_period must be a number of seconds"),
    ({"power_policy": "hard", "grace_period": 5}, "grace_period is not used with power_policy "
                                                  "hard"),
    ({"force": True, "power_policy": "hard"}, "options.force is the older name"),
])
def test_bad_power_options_are_refused_with_each_problem(make_site: SiteFactory,
                                                         options: dict[str, Any], problem: str):
    site = make_site(["n1"])
    body = {"action": "power_off_nodes", "design_ref": site.href,
            "node_filter": names("n1"), "options": options}
    with pytest.raises(BerthError) as err:
        site.runtime.service.create(body, RequestContext(user="admin"), None)
    assert err.value.code == 400 and problem in str(err.value.messages)


def test_the_design_grace_period_is_validated():
    docs = [designs.doc("drydock/Region/v1", "r", {"power": {"grace_period": -5,
                                                             "policy": "x"}})]
    problems = power.design_problems(docs)
    assert any("power.grace_period must be a number" in p for p in problems)
    assert any("unknown setting 'policy'" in p for p in problems)
    assert power.design_grace(docs) is None


def test_a_bad_option_is_named_once(make_site: SiteFactory) -> None:
    """The document's schema and the action's own check both know grace_period: one problem."""
    site = make_site(["n1"])
    body = {"action": "power_off_nodes", "design_ref": site.href, "node_filter": names("n1"),
            "options": {"grace_period": -1, "power_policy": "gentle"}}
    with pytest.raises(BerthError) as err:
        site.runtime.service.create(body, RequestContext(user="admin"), None)
    messages = [str(m) for m in err.value.messages]
    assert len([m for m in messages if "grace_period" in m]) == 1, messages
    assert len([m for m in messages if "power_policy" in m]) == 1, messages
