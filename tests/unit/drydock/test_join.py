"""deploy_nodes' join check reads Promenade's node view: Ready only when the Ready condition
is "True" (Promenade reports the condition's status as a string); with the Node's version
from an earlier answer it long-polls Promenade, and the step then looks again at once."""

from __future__ import annotations

from typing import Any

import pytest

from common.context import RequestContext
from drydock_api.drivers.promenade import PromenadeJoin


class Response:
    def __init__(self, code: int, body: Any, headers: dict[str, str]) -> None:
        self.status_code, self._body, self.headers = code, body, headers

    def json(self) -> Any:
        return self._body


class Promenade:
    """Answers GET /nodes/{name} with `body` (None: 404) and records the query."""

    def __init__(self, body: dict[str, Any] | None, headers: dict[str, str] | None = None
                 ) -> None:
        self.body, self.headers = body, headers or {}
        self.params: list[Any] = []

    def raw(self, method: str, path: str, *, params: Any = None, **_: Any) -> Response:
        self.params.append(params)
        if self.body is None:
            return Response(404, {}, {})
        return Response(200, self.body, self.headers)


@pytest.mark.parametrize("ready, expected", [
    ("True", True), ("False", False), ("Unknown", False), (None, False)])
def test_a_node_is_joined_only_when_its_ready_condition_is_true(ready: Any,
                                                                expected: bool) -> None:
    join = PromenadeJoin(Promenade({"kubelet": {"ready": ready}}))  # type: ignore[arg-type]
    assert join.node_ready("node05", RequestContext()).ready is expected


def test_a_node_unknown_to_kubernetes_has_not_joined_yet() -> None:
    join = PromenadeJoin(Promenade(None))  # type: ignore[arg-type]
    assert join.node_ready("node05", RequestContext()).ready is None


def test_with_a_version_the_check_long_polls_promenade() -> None:
    peer = Promenade({"kubelet": {"ready": "False"}}, {"X-Node-Version": "41"})
    join = PromenadeJoin(peer)  # type: ignore[arg-type]
    first = join.node_ready("node05", RequestContext())
    later = join.node_ready("node05", RequestContext(), since=first.version, wait=10)
    assert (first.version, later.version) == ("41", "41")
    assert peer.params == [None, {"since": "41", "wait": "10"}]


def test_a_busy_promenade_gives_no_version_so_the_step_polls() -> None:
    peer = Promenade({"kubelet": {"ready": "False"}},
                     {"X-Node-Version": "41", "X-Long-Poll": "busy"})
    answer = PromenadeJoin(peer).node_ready(  # type: ignore[arg-type]
        "node05", RequestContext(), since="41", wait=10)
    assert answer.ready is False and answer.version is None
