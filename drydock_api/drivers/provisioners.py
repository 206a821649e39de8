"""Which provisioner serves a design: its Region's `provisioner` (maas, the default, or ironic)
names it; Drydock's configuration only says where each one lives ([maas] url, [ironic] url).

The power path follows the provisioner too: a node's BmcAccess carries its design's
provisioner, and `PowerPaths` sends the power calls of an Ironic design's nodes through Ironic,
those of a MAAS design's nodes straight to their BMCs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from common.errors import UnprocessableEntity
from common.status import Message, validation_message
from drydock_api.drivers.ports import (
    DEFAULT_PROVISIONER,
    PROVISIONERS,
    BmcAccess,
    OobDriver,
    OobError,
    Provisioner,
    RoutedOob,
)

LABELS = {"maas": "MAAS", "ironic": "Ironic"}  # as step messages name them
SETTINGS = {"maas": "[maas] url", "ironic": "[ironic] url"}


class ProvisionerNotConfigured(UnprocessableEntity):
    """The design asks for a provisioner this Drydock has no connection settings for."""

    reason, title = "ProvisionerNotConfigured", "The design's provisioner is not configured"
    retry = False


class Retirement(Protocol):
    """A provisioner's own retirement flag (Ironic's `retired`, `retired_reason`, spec 003)."""

    def retire(self, hostname: str, reason: str | None) -> None:
        """Mark the node retired (refused, nothing changed, where the provisioner refuses)."""

    def unretire(self, hostname: str) -> None:
        """Clear the node's retired flag and reason."""


@dataclass(frozen=True)
class Backend:
    """One configured provisioner: its port and, where it keeps one, its retirement flag."""

    name: str  # maas | ironic, as a design's Region names it
    port: Provisioner
    retirement: Retirement | None = None

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)


class Backends:
    """The provisioners this Drydock has connection settings for, by name."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        self._backends = dict(backends)

    def names(self) -> list[str]:
        return sorted(self._backends)

    def get(self, name: str | None) -> Backend:
        """The backend a design names (None: the default, MAAS); 422 when not configured."""
        wanted = name or DEFAULT_PROVISIONER
        found = self._backends.get(wanted)
        if found is None:
            raise ProvisionerNotConfigured(
                not_configured(wanted, self.names()),
                messages=problems(wanted, self.names()))
        return found

    def default(self) -> Backend:
        """MAAS when configured, else the one provisioner there is."""
        return self._backends.get(DEFAULT_PROVISIONER) or next(iter(self._backends.values()))


def not_configured(wanted: str, configured: list[str]) -> str:
    have = ", ".join(configured) or "none"
    return (f"The design's drydock/Region/v1 provisioner is {wanted}, and this Drydock has no "
            f"{LABELS.get(wanted, wanted)} connection settings ({SETTINGS.get(wanted, wanted)} "
            f"is empty; configured: {have})")


def problems(wanted: str | None, configured: list[str]) -> list[Message]:
    """A ValidationMessage when `wanted` (the design's provisioner) is not configured."""
    name = wanted or DEFAULT_PROVISIONER
    if name in configured or name not in PROVISIONERS:  # an unknown name: the schema says so
        return []
    return [validation_message(not_configured(name, configured),
                               name="ProvisionerNotConfigured")]


class PowerPaths(RoutedOob):
    """An OobDriver choosing the power path of a node by its design's provisioner
    (BmcAccess.provisioner): `paths` by provisioner name; a name without a path is refused."""

    def __init__(self, paths: Mapping[str, OobDriver]) -> None:
        self._paths = dict(paths)

    def _pick(self, bmc: BmcAccess) -> OobDriver:
        try:
            return self._paths[bmc.provisioner]
        except KeyError:
            raise OobError(not_configured(bmc.provisioner, sorted(self._paths))) from None
