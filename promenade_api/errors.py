"""Promenade's failure reasons, exactly as the teardown spec names them."""

from __future__ import annotations

from common.errors import BadRequest, Conflict, InternalError, ValidationFailed


class DrainNodeError(InternalError):
    reason, title, retry = "DrainNodeError", "Drain node failed", False


class ClearLabelsError(InternalError):
    reason, title, retry = "ClearLabelsError", "Clear labels failed", False


class RemoveEtcdError(InternalError):
    reason, title, retry = "RemoveEtcdError", "Remove etcd failed", False


class ShutdownKubeletError(InternalError):
    reason, title, retry = "ShutdownKubeletError", "Shutdown kubelet failed", False


class DeleteNodeError(InternalError):
    reason, title, retry = "DeleteNodeError", "Delete node failed", True


class EtcdNotAccessible(InternalError):
    reason, title, retry = "EtcdNotAccessible", "etcd is not accessible", True


class DisassociateStepFailure(InternalError):
    reason, title, retry = "DisassociateStepFailure", "Decommission failed", False


class MissingDesignRef(BadRequest):
    reason, title = "MissingDesignRef", "Missing design reference"


class NodeNotDrained(Conflict):
    title = "Node cannot be removed"


class NodeNotReady(Conflict):
    reason, title = "NodeNotReady", "Node is not Ready"


class OperationCancelled(Conflict):
    reason, title = "Cancelled", "Cancelled"


class JoinEtcdError(InternalError):
    reason, title, retry = "JoinEtcdError", "Join etcd failed", True


class JoinEtcdRefused(Conflict):
    reason, title, retry = "JoinEtcdRefused", "Join etcd refused", True


class LearnerNotCaughtUp(Conflict):
    reason, title, retry = "LearnerNotCaughtUp", "etcd learner did not catch up", True


class EtcdPeerUrlMissing(BadRequest):
    reason, title = "EtcdPeerUrlMissing", "etcd member has no peer URL"


class DesignInvalid(ValidationFailed):
    """Airship's validatedesign answer: reason Validation."""

    reason, title = "Validation", "Promenade validations failed"
