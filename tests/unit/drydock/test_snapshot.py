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


def test_a_long_node_list_is_encoded_again_as_soon_as_a_background_listing_lands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The request after a background MAAS listing finds the new list encoded already."""
    maas, now = Maas(), [100.0]
    design = parse_design(designs.simple_site(["n1", "n2"]))
    inventory = Inventory(cast(MachineLookup, maas), cast(PowerInterface, None), records=dict,
                          last_design_ref=lambda: "ref", designs=lambda ref, ctx: design,
                          live_limit=1, listing_max_age=10.0, clock=lambda: now[0],
                          records_key=lambda: 0)
    encoded: list[int] = []
    real = inventory_module._encode
    monkeypatch.setattr(inventory_module, "_encode",
                        lambda value: encoded.append(1) or real(value))
    first, _ = inventory.nodes_json(RequestContext(), "ref")
    assert b'"Deployed"' in first and len(encoded) == 1
    maas.status, now[0] = "Releasing", now[0] + 11
    maas.gate.clear()
    assert inventory.nodes_json(RequestContext(), "ref")[0] == first  # the old one, at once
    maas.gate.set()
    for _ in range(1000):
        if len(encoded) == 2:
            break
        threading.Event().wait(0.01)
    assert len(encoded) == 2  # encoded again in the listing's thread
    assert b'"Releasing"' in inventory.nodes_json(RequestContext(), "ref")[0]
    assert len(encoded) == 2  # the request did not encode


def test_a_refresh_finding_the_same_machines_keeps_the_listing_and_its_encoded_lists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A quiet site's listing every max_age seconds rebuilds nothing; a change still does."""
    maas, now = Maas(), [100.0]
    design = parse_design(designs.simple_site(["n1", "n2"]))
    inventory = Inventory(cast(MachineLookup, maas), cast(PowerInterface, None), records=dict,
                          last_design_ref=lambda: "ref", designs=lambda ref, ctx: design,
                          live_limit=1, listing_max_age=10.0, clock=lambda: now[0],
                          records_key=lambda: 0)
    encoded: list[int] = []
    real = inventory_module._encode
    monkeypatch.setattr(inventory_module, "_encode",
                        lambda value: encoded.append(1) or real(value))
    first, _ = inventory.nodes_json(RequestContext(), "ref")
    for _ in range(3):  # MAAS answers the same each time
        now[0] += 11
        calls = maas.calls
        inventory.nodes_json(RequestContext(), "ref")
        for _ in range(1000):
            if maas.calls > calls:
                break
            threading.Event().wait(0.01)
        assert maas.calls == calls + 1  # listed again in the background
    threading.Event().wait(0.05)
    assert inventory.nodes_json(RequestContext(), "ref")[0] == first and len(encoded) == 1
    snap = MachineSnapshot(maas.list_machines, 10.0, lambda: now[0])
    kept = snap.refresh()
    assert snap.refresh() is kept
    maas.status = "Releasing"
    assert snap.refresh() is not kept and snap.get().machines["n1"].status_name == "Releasing"
