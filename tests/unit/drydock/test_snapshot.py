"""The MAAS listing behind long node lists: waited for once, then refreshed in the background."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from common.context import RequestContext
from drydock_api.drivers.ports import MaasError, Machine, MachineLookup, PowerInterface
from drydock_api.nodes import inventory as inventory_module
from drydock_api.nodes.design import parse_design
from drydock_api.nodes.inventory import Inventory
from drydock_api.nodes.snapshot import MachineSnapshot
from tests.unit.drydock import designs


class Maas:
    def __init__(self) -> None:
        self.status = "Deployed"
        self.calls = 0
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False

    def list_machines(self) -> list[Machine]:
        self.gate.wait(10)
        self.calls += 1
        if self.fail:
            raise MaasError("MAAS unreachable", transient=True)
        return [Machine("id-n1", "n1", self.status)]


def test_the_first_listing_is_waited_for_then_reused_while_young() -> None:
    maas, now = Maas(), [100.0]
    snap = MachineSnapshot(maas.list_machines, 10.0, lambda: now[0])
    assert snap.get().machines["n1"].status_name == "Deployed"
    maas.status = "Releasing"
    now[0] += 5
    assert snap.get().machines["n1"].status_name == "Deployed" and maas.calls == 1


def test_an_old_listing_is_served_while_one_refresh_runs_in_the_background() -> None:
    maas, now = Maas(), [100.0]
    snap = MachineSnapshot(maas.list_machines, 10.0, lambda: now[0])
    snap.get()
    maas.status, now[0] = "Releasing", now[0] + 11
    maas.gate.clear()  # MAAS is slow now: nobody waits for it
    assert snap.get().machines["n1"].status_name == "Deployed"
    assert snap.get().machines["n1"].status_name == "Deployed"  # no second refresh started
    maas.gate.set()
    for _ in range(1000):
        if snap.get().machines["n1"].status_name == "Releasing":
            break
        threading.Event().wait(0.01)
    assert snap.get().machines["n1"].status_name == "Releasing" and maas.calls == 2


def test_a_failed_listing_carries_the_maas_error() -> None:
    maas = Maas()
    maas.fail = True
    listing = MachineSnapshot(maas.list_machines, 10.0, lambda: 0.0).get()
    assert listing.machines == {} and listing.error == "MAAS unreachable"


class Counted:
    """An inventory over `Maas` with long lists from one node up, its clock, and how many
    times it encoded a node list."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.maas, self.now = Maas(), [100.0]
        design = parse_design(designs.simple_site(["n1", "n2"]))
        self.inventory = Inventory(
            cast(MachineLookup, self.maas), cast(PowerInterface, None), records=dict,
            last_design_ref=lambda: "ref", designs=lambda ref, ctx: design, live_limit=1,
            listing_max_age=10.0, clock=lambda: self.now[0], records_key=lambda: 0)
        self.encoded: list[int] = []
        real = inventory_module._encode
        monkeypatch.setattr(inventory_module, "_encode",
                            lambda value: self.encoded.append(1) or real(value))

    def nodes(self) -> bytes:
        return self.inventory.nodes_json(RequestContext(), "ref")[0]


def test_a_long_node_list_is_encoded_again_as_soon_as_a_background_listing_lands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The request after a background MAAS listing finds the new list encoded already."""
    site = Counted(monkeypatch)
    first = site.nodes()
    assert b'"Deployed"' in first and len(site.encoded) == 1
    site.maas.status, site.now[0] = "Releasing", site.now[0] + 11
    site.maas.gate.clear()
    assert site.nodes() == first  # the old one, at once
    site.maas.gate.set()
    for _ in range(1000):
        if len(site.encoded) == 2:
            break
        threading.Event().wait(0.01)
    assert len(site.encoded) == 2  # encoded again in the listing's thread
    assert b'"Releasing"' in site.nodes()
    assert len(site.encoded) == 2  # the request did not encode


def test_a_refresh_finding_the_same_machines_keeps_the_listing_and_its_encoded_lists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A quiet site's listing every max_age seconds rebuilds nothing; a change still does."""
    site = Counted(monkeypatch)
    first = site.nodes()
    for _ in range(3):  # MAAS answers the same each time
        site.now[0] += 11
        calls = site.maas.calls
        for _ in range(1000):  # asked until a refresh (once the last one ended) has listed
            site.nodes()
            if site.maas.calls > calls:
                break
            threading.Event().wait(0.01)
        assert site.maas.calls == calls + 1  # listed again in the background
    threading.Event().wait(0.05)
    assert site.nodes() == first and len(site.encoded) == 1
    snap = MachineSnapshot(site.maas.list_machines, 10.0, lambda: site.now[0])
    kept = snap.refresh()
    assert snap.refresh() is kept
    site.maas.status = "Releasing"
    assert snap.refresh() is not kept and snap.get().machines["n1"].status_name == "Releasing"
