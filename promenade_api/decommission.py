"""Decommission: drain, clear labels, remove etcd members, await etcd, stop the kubelet."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.errors import BerthError, NotFound
from common.status import Message, simple_message
from promenade_api.errors import DisassociateStepFailure
from promenade_api.etcd.model import ClusterSpec
from promenade_api.kube.port import KubeNotFound
from promenade_api.service import Promenade

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class DecommissionParams:
    """The query parameters of POST /nodes/{node_id}/decommission (None: the step's default)."""

    drain_timeout: int | None = None
    drain_grace_period: int | None = None
    clear_labels_timeout: int | None = None
    remove_etcd_timeout: int | None = None
    etcd_ready_timeout: int | None = None


def decommission(svc: Promenade, node: str, clusters: list[ClusterSpec],
                 params: DecommissionParams) -> list[Message]:
    """Run every step in order; a failing step (but the kubelet's) stops with 500."""
    try:
        svc.kube.get_node(node)
    except KubeNotFound as exc:
        raise NotFound(f"Node {node} is not known to Kubernetes") from exc
    ready = svc.settings.etcd_ready_timeout if params.etcd_ready_timeout is None \
        else params.etcd_ready_timeout
    steps: list[tuple[str, Callable[[], Any], bool]] = [
        ("drain", lambda: svc.drain(node, params.drain_timeout, params.drain_grace_period),
         True),
        ("clear-labels", lambda: svc.clear_labels(node, params.clear_labels_timeout), True),
        ("remove-etcd", lambda: svc.remove_etcd(node, clusters, params.remove_etcd_timeout),
         True),
        ("etcd-ready", lambda: svc.remover().wait_stable(node, clusters, ready), True),
        ("shutdown-kubelet", lambda: svc.shutdown_kubelet(node), False),
    ]
    messages: list[Message] = []
    for name, run, fatal in steps:
        LOG.info("decommission %s: step %s", node, name)
        try:
            run()
        except BerthError as exc:
            failed = [simple_message(f"{name}: {exc.message} ({exc.instance_reason})",
                                     error=fatal, step=name)]
            failed += [{**m, "error": fatal and m.get("error", True), "step": name}
                       for m in exc.messages if m.get("message") != exc.message]
            messages += failed
            if fatal:
                LOG.warning("decommission %s: step %s failed: %s", node, name, exc.message)
                raise DisassociateStepFailure(
                    f"Decommission of {node} failed at step {name}", messages=messages,
                    details={"node": node, "failed_step": name}) from exc
            LOG.warning("decommission %s: %s failed (not fatal): %s", node, name, exc.message)
            continue
        messages.append(simple_message(f"{name}: succeeded", error=False, step=name))
    LOG.info("decommission %s: done", node)
    return messages
