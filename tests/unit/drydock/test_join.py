"""deploy_nodes' join check reads Promenade's node view: Ready only when the Ready condition
is "True" (Promenade reports the condition's status as a string)."""

from __future__ import annotations

from typing import Any

import pytest

from common.context import RequestContext
from common.errors import NotFound
from drydock_api.drivers.promenade import PromenadeJoin


class Answers:
    def __init__(self, body: dict[str, Any] | None) -> None:
        self.body = body

    def request(self, method: str, path: str, **_: Any) -> Any:
        if self.body is None:
            raise NotFound("Node node05 is not known to Kubernetes")
        return self.body


@pytest.mark.parametrize("ready, expected", [
    ("True", True), ("False", False), ("Unknown", False), (True, True), (None, False)])
def test_a_node_is_joined_only_when_its_ready_condition_is_true(ready: Any,
                                                                expected: bool) -> None:
    join = PromenadeJoin(Answers({"kubelet": {"ready": ready}}))  # type: ignore[arg-type]
    assert join.node_ready("node05", RequestContext()) is expected


def test_a_node_unknown_to_kubernetes_has_not_joined_yet() -> None:
    join = PromenadeJoin(Answers(None))  # type: ignore[arg-type]
    assert join.node_ready("node05", RequestContext()) is None
