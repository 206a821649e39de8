"""Wait for a node's per-node agents to be removed by their operators (spec 002).

Yaook's agents that need the L2 agent hold an `l2-lock.maintenance.yaook.cloud/<agent>`
annotation on the node while they run, and their operators release it only after deleting the
agent; the L2 operator deletes the L2 agent only once no lock is left. All of that starts when
the node is signalled for maintenance (its maintenance labels set, its scheduling labels
cleared), so this wait comes after those signals and before any step that takes the node's
kubelet or power away: never instead of them, which would wait for itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypedDict

from common.poll import NotYet, poll
from common.status import simple_message
from promenade_api.errors import DrainNodeError
from promenade_api.kube.drain import DrainSettings, held_locks
from promenade_api.kube.port import KubePort

LOG = logging.getLogger(__name__)


class AgentsGone(TypedDict):
    """The answer of a wait for the node's agents: how long it took (s)."""

    node: str
    waited: float


class AgentWaiter:
    """Wait until no agent lock is held on the node and no agent pod is left on it."""

    def __init__(self, kube: KubePort, settings: DrainSettings, *, clock: Callable[[], float],
                 sleep: Callable[[float], None], check: Callable[[], None] = lambda: None
                 ) -> None:
        self._kube, self._s, self._clock, self._sleep = kube, settings, clock, sleep
        self._check = check

    def state(self, node: str) -> tuple[list[str], list[str]]:
        """The agent locks held on the node, and its agent pods (sorted)."""
        current = self._kube.get_node(node)
        locks = held_locks(current.annotations, self._s.agent_lock_patterns)
        pods = sorted(p.key for p in self._kube.list_pods(node) if self._s.is_agent(p))
        return locks, pods

    def wait(self, node: str, timeout: int) -> AgentsGone:
        started = self._clock()

        def gone() -> AgentsGone | NotYet[tuple[list[str], list[str]]]:
            locks, pods = self.state(node)
            if locks or pods:
                return NotYet((locks, pods))
            LOG.info("agents %s: no agent lock or agent pod left", node)
            return {"node": node, "waited": round(self._clock() - started, 3)}

        def waiting(held: tuple[list[str], list[str]]) -> None:
            LOG.info("agents %s: waiting for locks %s and pods %s", node,
                     ", ".join(held[0]) or "-", ", ".join(held[1]) or "-")
            self._check()

        def late(held: tuple[list[str], list[str]]) -> AgentsGone:
            locks, pods = held
            raise DrainNodeError(
                f"The agents on {node} did not release their locks within {timeout}s "
                f"(still held: {', '.join(locks) or 'none'})",
                messages=[simple_message(f"Agent lock {k} still held on {node}; its "
                                         "operator releases it only after deleting its "
                                         "agent") for k in locks]
                + [simple_message(f"Agent pod {p} still on {node}", pod=p) for p in pods],
                details={"node": node, "locks": locks, "remaining_pods": pods})

        return poll(gone, deadline=started + timeout, interval=self._s.lock_poll_interval,
                    expire=late, between=waiting, clock=self._clock, sleep=self._sleep)
