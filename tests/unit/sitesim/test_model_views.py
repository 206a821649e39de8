"""The observation API's listing of every node reads the Kubernetes side once, not per node."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitesim.model import SiteModel
from sitesim.scheduler import Scheduler
from sitesim.siteconfig import load_site

ROOT = Path(__file__).resolve().parents[3]


class CountingKube:
    """The site's KubePort over a dict of Nodes, counting the requests an apiserver would get."""

    def __init__(self):
        self.nodes = {}
        self.requests = 0

    def add_node(self, name, labels, *, ready=True, control_plane=False):
        self.nodes[name] = {"present": True, "ready": ready, "kubelet": ready,
                            "unschedulable": False, "labels": dict(labels)}

    def set_ready(self, name, ready):
        self.nodes[name]["ready"] = self.nodes[name]["kubelet"] = ready

    def node_summary(self, name):
        self.requests += 1
        return self.nodes.get(name)

    def node_summaries(self):
        self.requests += 1
        return dict(self.nodes)


@pytest.fixture
def model():
    spec = load_site(ROOT / "etc/sites/demo.yaml")
    scheduler = Scheduler()
    m = SiteModel(spec, scheduler)
    m.kube = CountingKube()
    yield m
    scheduler.stop()


def test_views_read_every_node_in_one_request_and_match_each_view(model):
    names = list(model.nodes)
    for name in names[:-1]:  # the last server has no Node
        model.kube.add_node(name, {"rack": "r1"}, ready=name != names[0])
    model.kube.requests = 0

    views = model.views()

    assert model.kube.requests == 1
    assert views == [model.view(name) for name in names]
    assert views[0]["kubernetes"]["ready"] is False
    assert views[1]["kubernetes"] == {"present": True, "ready": True, "kubelet": True,
                                      "unschedulable": False, "labels": {"rack": "r1"}}
    assert views[-1]["kubernetes"] == {"present": False, "ready": False,
                                       "unschedulable": False, "labels": {}}
