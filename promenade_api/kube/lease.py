"""Mutual exclusion across Promenade replicas with a coordination.k8s.io Lease."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace

from common.poll import NotYet, poll
from promenade_api.kube.model import Lease
from promenade_api.kube.port import KubeConflict, KubeNotFound, KubePort

LOG = logging.getLogger(__name__)


class LeaseLock:
    """Take, renew and release one named Lease; an expired holder's lease may be taken over."""

    def __init__(self, kube: KubePort, namespace: str, name: str, *, duration: int,
                 wall: Callable[[], float], sleep: Callable[[float], None],
                 poll_interval: float = 1.0, holder: str | None = None) -> None:
        self._kube, self._ns, self._name = kube, namespace, name
        self._duration, self._wall, self._sleep, self._poll = duration, wall, sleep, poll_interval
        self.holder = holder or f"promenade-{uuid.uuid4().hex[:12]}"
        self._lease: Lease | None = None

    @property
    def name(self) -> str:
        return self._name

    def _free(self, lease: Lease) -> bool:
        if lease.holder in (None, "", self.holder):
            return True
        renewed = lease.renewed_at or 0.0
        return renewed + lease.duration < self._wall()

    def try_acquire(self) -> bool:
        """One attempt: True when this holder now has the lease."""
        mine = Lease(self._name, self.holder, self._wall(), self._duration)
        try:
            current = self._kube.get_lease(self._ns, self._name)
            if current is None:
                self._lease = self._kube.create_lease(self._ns, mine)
                return True
            if not self._free(current):
                return False
            self._lease = self._kube.update_lease(self._ns, replace(mine,
                                                                     version=current.version))
            return True
        except KubeConflict:
            return False

    def acquire(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the lease."""
        if not poll(lambda: self.try_acquire() or NotYet(), deadline=self._wall() + timeout,
                    interval=self._poll, expire=lambda _: False,
                    between=lambda _: LOG.info("lease %s held by another holder; waiting",
                                               self._name),
                    clock=self._wall, sleep=self._sleep):
            return False
        LOG.info("lease %s acquired by %s", self._name, self.holder)
        return True

    def renew(self) -> None:
        if self._lease is not None:
            self._lease = self._kube.update_lease(
                self._ns, replace(self._lease, renewed_at=self._wall()))

    def release(self) -> None:
        if self._lease is None:
            return
        try:
            self._kube.update_lease(self._ns, replace(self._lease, holder=None,
                                                      renewed_at=None))
        except (KubeConflict, KubeNotFound) as exc:
            LOG.warning("lease %s not released: %s", self._name, exc)
        self._lease = None
