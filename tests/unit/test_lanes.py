"""The suite's scheduler: whole modules in order, never more site modules at once than lanes,
light modules to the workers that may not start a site, and waiting workers woken when a site
module ends."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.lanes import SiteLanes


class Worker:
    def __init__(self, name: str) -> None:
        self.name, self.shutting_down = name, False
        self.sent: list[int] = []
        self.done: list[int] = []
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


COLLECTION = [
    "tests/e2e/test_a.py::t1", "tests/e2e/test_a.py::t2", "tests/e2e/test_a.py::t3",
    "tests/e2e/test_b.py::t1", "tests/e2e/test_b.py::t2", "tests/e2e/test_b.py::t3",
    "tests/e2e/test_c.py::t1", "tests/e2e/test_c.py::t2", "tests/e2e/test_c.py::t3",
    "tests/unit/test_x.py::t1", "tests/unit/test_x.py::t2", "tests/unit/test_x.py::t3",
    "tests/unit/test_y.py::t1", "tests/unit/test_y.py::t2", "tests/unit/test_y.py::t3",
]


def scheduler(workers: int, lanes: int) -> tuple[SiteLanes, list[Worker]]:
    config: Any = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"],
                                  option=SimpleNamespace(loadscopereorder=False))
    sched = SiteLanes(config, lanes=lanes)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)  # type: ignore[arg-type]
        sched.add_node_collection(node, COLLECTION)  # type: ignore[arg-type]
    sched.schedule()
    return sched, nodes


def modules(sched: SiteLanes, node: Worker) -> list[str]:
    return list(sched.assigned_work[node])  # type: ignore[index]


def running_sites(sched: SiteLanes) -> int:
    return sum(sched._holds_a_site(node) for node in sched.nodes)


def finish(sched: SiteLanes, node: Worker) -> None:
    """Runs the worker's tests until it has none, including those it is sent meanwhile."""
    while node.sent:
        index = node.sent.pop(0)
        node.done.append(index)
        sched.mark_test_complete(node, index)  # type: ignore[arg-type]
        assert running_sites(sched) <= sched.lanes


def test_workers_beyond_the_lanes_take_light_modules_and_the_order_is_kept() -> None:
    sched, (gw0, gw1, gw2) = scheduler(workers=3, lanes=1)
    assert [modules(sched, node) for node in (gw0, gw1, gw2)] == [
        ["tests/e2e/test_a.py"], ["tests/unit/test_x.py"], ["tests/unit/test_y.py"]]
    assert list(sched.workqueue) == ["tests/e2e/test_b.py", "tests/e2e/test_c.py"]
    assert running_sites(sched) == 1


def test_a_worker_holding_a_lane_keeps_it_and_the_others_wait_then_shut_down() -> None:
    sched, (gw0, gw1, gw2) = scheduler(workers=3, lanes=2)
    assert [modules(sched, node) for node in (gw0, gw1, gw2)] == [
        ["tests/e2e/test_a.py"], ["tests/e2e/test_b.py"], ["tests/unit/test_x.py"]]
    finish(sched, gw2)  # x, then y (c may not start: both lanes are taken)
    assert modules(sched, gw2) == ["tests/unit/test_x.py", "tests/unit/test_y.py"]
    assert list(sched.workqueue) == ["tests/e2e/test_c.py"] and not gw2.shutting_down
    finish(sched, gw1)  # b's worker went on with c, the next site module
    assert modules(sched, gw1) == ["tests/e2e/test_b.py", "tests/e2e/test_c.py"]
    assert gw2.shutting_down  # woken when the queue emptied, with nothing left to take
    finish(sched, gw0)
    assert sched.tests_finished
    assert all(node.shutting_down for node in (gw0, gw1, gw2))
    assert sorted(index for node in (gw0, gw1, gw2) for index in node.done) == \
        list(range(len(COLLECTION)))  # every test ran once
