"""How `make test` hands modules to its pytest-xdist workers (`--dist loadscope`): whole modules,
in the suite's order (longest first), but at most `BERTH_TEST_SITE_LANES` (default 2) of the
modules that start a whole site at a time.

Four sites at once on a 2-core machine drove the load average to 20-25, and a BMC, Ironic's
verification or a service then answered slower than the tests' bounds. A worker that may not
start another site takes the next light module instead, or waits until a lane is free."""

from __future__ import annotations

import os

import pytest
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

LANES_ENV = "BERTH_TEST_SITE_LANES"

# Path prefixes of the modules that start a whole site of their own (a Kubernetes control plane,
# an etcd cluster, BMCs, the three services; an Ironic or podman containers): about half of the
# suite's time. The other modules start one or a few processes.
SITE_MODULES = ("tests/image/", "tests/e2e/", "tests/integration/ironic/")


def starts_a_site(scope: str) -> bool:
    return scope.startswith(SITE_MODULES)


class SiteLanes(LoadScopeScheduling):
    """LoadScopeScheduling with a bound on the site modules running at once."""

    def __init__(self, config: pytest.Config, log: object = None, *, lanes: int = 2) -> None:
        super().__init__(config, log)
        self.lanes = max(1, lanes)

    def _holds_a_site(self, node: WorkerController) -> bool:
        return any(starts_a_site(scope) and not all(unit.values())
                   for scope, unit in self.assigned_work.get(node, {}).items())

    def _may_start_a_site(self, node: WorkerController) -> bool:
        if self._holds_a_site(node):
            return True  # its next site module starts after the one it runs
        return sum(self._holds_a_site(other) for other in self.nodes
                   if other is not node) < self.lanes

    def _assign_work_unit(self, node: WorkerController) -> None:
        allowed = self._may_start_a_site(node)
        scope = next((s for s in self.workqueue if allowed or not starts_a_site(s)), None)
        if scope is None:
            return  # only site modules are left and every lane is taken: wait
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def mark_test_complete(self, node: WorkerController, item_index: int,
                           duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        # a site module that ended frees a lane: the workers left waiting take work again
        for other in self.nodes:
            if other is not node and not self._pending_of(self.assigned_work[other]):
                self._reschedule(other)


def make_scheduler(config: pytest.Config, log: object) -> SiteLanes | None:
    if config.getoption("dist", None) != "loadscope":
        return None
    return SiteLanes(config, log, lanes=int(os.environ.get(LANES_ENV, "2")))
